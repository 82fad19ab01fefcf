package main

import (
	"context"
	"encoding/json"
	"sync"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// hostLoop registers the bridge with mcpd as host for its servers, with
// what the MCP host declared at initialize, and keeps the registration
// alive across mcpd restarts. mcpd then sends it the roots/list,
// sampling/createMessage and elicitation/create requests of legacy
// children, which the bridge relays to the MCP host.
func (b *bridge) hostLoop(ctx context.Context) {
	keepOpen(ctx, func() bool { return b.hostOnce(ctx) })
}

// hostOnce runs one Host stream; it reports whether mcpd accepted the
// registration.
func (b *bridge) hostOnce(ctx context.Context) bool {
	if b.ready(ctx) != nil {
		return false
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stream, err := b.client.Host(sctx)
	if err != nil {
		return false
	}
	b.mu.Lock()
	caps, info := b.hostCaps, b.hostInfo
	b.mu.Unlock()
	err = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: &mcpdv1.HostRegistration{
		Servers:     b.names,
		Roots:       hostDeclares(caps, "roots/list"),
		Sampling:    hostDeclares(caps, "sampling/createMessage"),
		Elicitation: hostDeclares(caps, "elicitation/create"),
		Client:      clientInfoProto(info),
	}}})
	if err != nil {
		return false
	}
	if m, err := stream.Recv(); err != nil || m.GetRegistered() == nil {
		return false
	}
	var (
		sendMu sync.Mutex
		mu     sync.Mutex // guards calls
		calls  = map[uint64]context.CancelFunc{}
	)
	for {
		m, err := stream.Recv()
		if err != nil {
			return true
		}
		switch msg := m.GetMsg().(type) {
		case *mcpdv1.HostResponse_Call:
			call := msg.Call
			cctx, ccancel := context.WithCancel(sctx)
			mu.Lock()
			calls[call.GetCallId()] = ccancel
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(calls, call.GetCallId())
					mu.Unlock()
					ccancel()
				}()
				res, rerr := b.hostRequest(cctx, call.GetMethod(), json.RawMessage(call.GetParamsJson()))
				if cctx.Err() != nil {
					return // cancelled by the child, or the stream ended
				}
				ans := &mcpdv1.HostAnswer{CallId: call.GetCallId()}
				if rerr != nil {
					ans.Error = &mcpdv1.McpError{Code: rerr.Code, Message: rerr.Message, DataJson: string(rerr.Data)}
				} else {
					ans.ResultJson = string(res)
				}
				sendMu.Lock()
				defer sendMu.Unlock()
				_ = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: ans}})
			})
		case *mcpdv1.HostResponse_Cancel:
			mu.Lock()
			if c := calls[msg.Cancel.GetCallId()]; c != nil {
				c()
			}
			mu.Unlock()
		}
	}
}
