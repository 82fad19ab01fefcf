package apiconv

import (
	"encoding/json"
	"time"
	"unsafe"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// OptionsOf is opts (nil: none) as the service takes them, unchecked.
func OptionsOf(opts *mcpdv1.CallOptions) service.Options {
	o := service.Options{Timeout: time.Duration(opts.GetTimeoutMs()) * time.Millisecond,
		ClientCapabilities: json.RawMessage(opts.GetClientCapabilitiesJson())}
	if c := opts.GetClient(); c != nil {
		o.Client = service.Client{Name: c.GetName(), Version: c.GetVersion()}
	}
	return o
}

// OptionsToProto is o as a gRPC request carries it.
func OptionsToProto(o service.Options) *mcpdv1.CallOptions {
	opts := &mcpdv1.CallOptions{TimeoutMs: o.Timeout.Milliseconds(), ClientCapabilitiesJson: string(o.ClientCapabilities)}
	if c := ClientToProto(o.Client); c != nil {
		opts.Client = c
	}
	return opts
}

// ClientToProto is c as mcpd.v1 names an app, nil for none.
func ClientToProto(c service.Client) *mcpdv1.ClientInfo {
	if c == (service.Client{}) {
		return nil
	}
	return &mcpdv1.ClientInfo{Name: c.Name, Version: c.Version}
}

// RequestToProto is r as the SendRequest RPC takes it: its params a view
// of r's, not a copy (they may be tens of MiB); the caller must not write
// them while the request is in use.
func RequestToProto(r service.Request) *mcpdv1.SendRequestRequest {
	return &mcpdv1.SendRequestRequest{Server: r.Server, Method: r.Method, ParamsJson: bytesView(r.Params), Options: OptionsToProto(r.Options)}
}

// ReadToProto is r as the ReadResource RPC takes it.
func ReadToProto(r service.Read) *mcpdv1.ReadResourceRequest {
	return &mcpdv1.ReadResourceRequest{
		Server: r.Server, Uri: r.URI, Options: OptionsToProto(r.Options),
		InputResponsesJson: string(r.InputResponses), RequestState: r.RequestState,
	}
}

// EventOf is a call's progress or log message as the service gives it;
// ok is false for any other event (the response).
func EventOf(ev *mcpdv1.CallToolEvent) (_ service.Event, ok bool) {
	switch e := ev.GetEvent().(type) {
	case *mcpdv1.CallToolEvent_ProgressJson:
		return service.Event{Kind: service.Progress, Params: json.RawMessage(e.ProgressJson)}, true
	case *mcpdv1.CallToolEvent_MessageJson:
		return service.Event{Kind: service.Message, Params: json.RawMessage(e.MessageJson)}, true
	}
	return service.Event{}, false
}

// ResponseOf is r as the service gives it.
func ResponseOf(r *mcpdv1.McpResponse) *service.Response {
	out := &service.Response{Server: r.GetServer(), Result: json.RawMessage(r.GetResultJson()),
		Cache: SourceOf(r.GetCache()), Duration: time.Duration(r.GetDurationUs()) * time.Microsecond}
	if r.GetError() != nil {
		out.Error = ErrorOf(r.GetError())
	}
	return out
}

// SourceOf is c as the service names it.
func SourceOf(c mcpdv1.CacheStatus) service.Source {
	switch c {
	case mcpdv1.CacheStatus_CACHE_STATUS_HIT:
		return service.Hit
	case mcpdv1.CacheStatus_CACHE_STATUS_COALESCED:
		return service.Coalesced
	}
	return service.Fetched
}

// SourceToProto is src as mcpd.v1 names it.
func SourceToProto(src service.Source) mcpdv1.CacheStatus {
	switch src {
	case service.Hit:
		return mcpdv1.CacheStatus_CACHE_STATUS_HIT
	case service.Coalesced:
		return mcpdv1.CacheStatus_CACHE_STATUS_COALESCED
	}
	return mcpdv1.CacheStatus_CACHE_STATUS_FETCHED
}

// ErrorOf is a server's JSON-RPC error as mcpd.v1 carries it; its data is
// dropped unless it is JSON.
func ErrorOf(e *mcpdv1.McpError) *jsonrpc.Error {
	out := &jsonrpc.Error{Code: e.GetCode(), Message: e.GetMessage()}
	if d := e.GetDataJson(); d != "" && json.Valid([]byte(d)) {
		out.Data = json.RawMessage(d)
	}
	return out
}

// ErrorToProto is e as mcpd.v1 carries it.
func ErrorToProto(e *jsonrpc.Error) *mcpdv1.McpError {
	return &mcpdv1.McpError{Code: e.Code, Message: e.Message, DataJson: string(e.Data)}
}

// ServerListsOf are lists as the service gives them, their items views
// of lists'; nil for none.
func ServerListsOf(lists []*mcpdv1.ServerList) []service.ServerList {
	if lists == nil {
		return nil
	}
	out := make([]service.ServerList, len(lists))
	for i, e := range lists {
		out[i] = service.ServerList{Server: e.GetServer(), Items: stringView(e.GetItemsJson()), Unavailable: e.GetUnavailable()}
		if e.GetError() != nil {
			out[i].Error = ErrorOf(e.GetError())
		}
	}
	return out
}

// HostRegistrationToProto is r as the Host RPC's first message carries it.
func HostRegistrationToProto(r service.HostRegistration) *mcpdv1.HostRegistration {
	return &mcpdv1.HostRegistration{
		Servers:        r.Servers,
		Roots:          r.Roots,
		Sampling:       r.Sampling,
		Elicitation:    r.Elicitation,
		ElicitationUrl: r.ElicitationURL,
		Client:         ClientToProto(r.Client),
	}
}

// stringView is s's bytes, not a copy: never written.
func stringView(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// bytesView is b as a string, not a copy: b must not be written while the
// string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
