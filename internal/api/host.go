package api

import (
	"encoding/json"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"google.golang.org/grpc"
)

// Host registers the app as an MCP host: the first message declares what
// it answers; then mcpd sends it its children's requests and it answers
// them on the same stream, until it closes the stream.
func (s *Server) Host(stream grpc.BidiStreamingServer[mcpdv1.HostRequest, mcpdv1.HostResponse]) error {
	msg0, err := stream.Recv()
	if err != nil {
		return nil // the app left before registering
	}
	reg := msg0.GetRegister()
	if reg == nil {
		return service.Errorf(service.InvalidArgument, "the first message of a Host stream must be a registration")
	}
	return s.svc.ServeHostStream(stream.Context(), service.HostRegistration{
		Servers: reg.GetServers(), Roots: reg.GetRoots(), Sampling: reg.GetSampling(),
		Elicitation: reg.GetElicitation(), ElicitationURL: reg.GetElicitationUrl(),
		Client: service.Client{Name: reg.GetClient().GetName(), Version: reg.GetClient().GetVersion()},
	}, func(id uint64) error {
		return stream.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Registered{
			Registered: &mcpdv1.HostRegistered{HostId: id},
		}})
	}, hostStream{stream})
}

// hostStream is a gRPC Host stream as the service serves it
// (core.HostStream).
type hostStream struct {
	grpc.BidiStreamingServer[mcpdv1.HostRequest, mcpdv1.HostResponse]
}

func (h hostStream) SendCall(id uint64, server, method string, params json.RawMessage) error {
	return h.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Call{Call: &mcpdv1.HostCall{
		CallId: id, Server: server, Method: method, ParamsJson: string(params),
	}}})
}

func (h hostStream) SendCancel(id uint64, reason string) error {
	return h.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Cancel{Cancel: &mcpdv1.HostCancel{
		CallId: id, Reason: reason,
	}}})
}

func (h hostStream) SendNotice(server, method string, params json.RawMessage) error {
	return h.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Notification{Notification: &mcpdv1.HostNotification{
		Server: server, Method: method, ParamsJson: string(params),
	}}})
}

// Recv reads the host's next answer: a JSON-RPC error whose data is not
// JSON loses its data.
func (h hostStream) Recv() (uint64, json.RawMessage, *jsonrpc.Error, error) {
	in, err := h.BidiStreamingServer.Recv()
	if err != nil {
		return 0, nil, nil, err
	}
	a := in.GetAnswer()
	if a == nil {
		return 0, nil, nil, core.ErrNotAnswer
	}
	if e := a.GetError(); e != nil {
		rerr := &jsonrpc.Error{Code: e.GetCode(), Message: e.GetMessage()}
		if e.GetDataJson() != "" && json.Valid([]byte(e.GetDataJson())) {
			rerr.Data = json.RawMessage(e.GetDataJson())
		}
		return a.GetCallId(), nil, rerr, nil
	}
	return a.GetCallId(), stringBytes(a.GetResultJson()), nil, nil
}
