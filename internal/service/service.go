// Package service is the vocabulary of mcpd's in-process service
// (internal/core): the requests, options, events, responses and statuses
// with which every door calls it, as plain Go values rather than
// protocol buffers. It imports only the standard library and jsonrpc, so that
// the bridge, which mcpdctl also links, can speak it.
package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Client is the app's name and version, as MCP's clientInfo gives them.
type Client struct {
	Name    string
	Version string
}

// Options are a call's settings.
type Options struct {
	// Timeout bounds the call; zero is the server's own request timeout.
	// Negative is refused.
	Timeout time.Duration
	// Client names the app for this call; empty: the app's connection's.
	Client Client
	// ClientCapabilities is the app's MCP client capabilities, a JSON
	// object; nil for none.
	ClientCapabilities json.RawMessage
}

// Request is one MCP request to one server: any method but those the
// session owns (initialize) and the subscription methods.
type Request struct {
	Server string
	Method string
	// Params is the request's params, a JSON object; nil means {}. It is
	// read, never written, and may be passed to the child as it is.
	Params  json.RawMessage
	Options Options
}

// EventKind tells what an Event carries.
type EventKind uint8

// Kinds of events of a call, before its response.
const (
	// Progress: the params of a notifications/progress of the call.
	Progress EventKind = iota + 1
	// Message: the params of a notifications/message the server sent
	// during the call.
	Message
)

// Event is one notification of a call in flight. Params is the caller's
// to keep.
type Event struct {
	Kind   EventKind
	Params json.RawMessage
}

// Source tells where a response came from.
type Source uint8

// Sources of a response.
const (
	// Fetched: the server was asked for this call.
	Fetched Source = iota
	// Hit: served from mcpd's cache.
	Hit
	// Coalesced: shared the answer of an identical request in flight.
	Coalesced
)

// Response is a server's answer to one request: its result, as the server
// wrote it, or its JSON-RPC error.
type Response struct {
	Server   string
	Result   json.RawMessage
	Error    *jsonrpc.Error
	Cache    Source
	Duration time.Duration
}

// ServerList is one server's part of a list (tools/list, prompts/list,
// resources/list, resources/templates/list): its items, the JSON array as
// the server listed them, or its JSON-RPC error, or, in a list of every
// server, why it could not be asked (Unavailable).
type ServerList struct {
	Server      string
	Items       json.RawMessage
	Error       *jsonrpc.Error
	Unavailable string
	Cache       Source
}

// Read is one resources/read.
type Read struct {
	Server string
	URI    string
	// InputResponses and RequestState answer a server's input_required
	// result (a JSON object and the state it gave); empty for none.
	InputResponses json.RawMessage
	RequestState   string
	Options        Options
}

// HostRegistration is an app's registration as an MCP host: which of the
// servers' requests to their client it answers, and for which servers
// (nil: every server).
type HostRegistration struct {
	Servers        []string
	Roots          bool
	Sampling       bool
	Elicitation    bool
	ElicitationURL bool
	// Client names the host; empty: the app's connection's name.
	Client Client
}

// HostAnswerer answers one request a server sent its client (roots/list,
// sampling/createMessage, elicitation/create), routed to a host: a result
// (a JSON object) or a JSON-RPC error. ctx ends when the server cancels
// the request or the registration ends.
type HostAnswerer func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error)

// HostNotifier takes a notification a server sent about a request the host
// answered (notifications/elicitation/complete of a url elicitation it was
// sent). It must not block.
type HostNotifier func(server, method string, params json.RawMessage)
