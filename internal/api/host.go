package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ServeChildRequest answers a request a child sent to mcpd (roots/list,
// sampling/createMessage, elicitation/create) by relaying it to an app
// registered through the Host RPC, or -32601 when none answers it. Pass it
// as supervisor.Options.OnRequest.
func (s *Server) ServeChildRequest(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	return s.hosts.serve(ctx, server, method, params)
}

// Host registers the app as an MCP host: the first message declares what
// it answers; then mcpd sends it its children's requests and it answers
// them on the same stream, until it closes the stream.
func (s *Server) Host(stream grpc.BidiStreamingServer[mcpdv1.HostRequest, mcpdv1.HostResponse]) error {
	return s.host(stream.Context(), stream)
}

// hostConn is a host's registration as the service serves it: what it
// receives from the host and sends to it. Recv returns io.EOF when the
// host ended it. A gRPC Host stream is one.
type hostConn interface {
	Recv() (*mcpdv1.HostRequest, error)
	Send(*mcpdv1.HostResponse) error
}

// host serves a Host registration on stream until the host or ctx ends it.
func (s *Server) host(ctx context.Context, stream hostConn) error {
	msg0, err := stream.Recv()
	if err != nil {
		return nil // the app left before registering
	}
	reg := msg0.GetRegister()
	if reg == nil {
		return codeError(service.InvalidArgument, "the first message of a Host stream must be a registration")
	}
	h, servers, err := s.registerHost(ctx, service.HostRegistration{
		Servers: reg.GetServers(), Roots: reg.GetRoots(), Sampling: reg.GetSampling(),
		Elicitation: reg.GetElicitation(), ElicitationURL: reg.GetElicitationUrl(),
		Client: service.Client{Name: reg.GetClient().GetName(), Version: reg.GetClient().GetVersion()},
	})
	if err != nil {
		return err
	}
	defer s.hosts.unregister(h)
	log := s.log.With(zap.Uint64("host_id", h.id), zap.String("app", h.name))
	log.Debug("host registered", zap.Strings("servers", servers),
		zap.Bool("roots", h.caps.roots), zap.Bool("sampling", h.caps.sampling), zap.Bool("elicitation", h.caps.elicitation))

	if err := stream.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Registered{
		Registered: &mcpdv1.HostRegistered{HostId: h.id},
	}}); err != nil {
		return nil
	}

	// The sender goroutine writes calls and cancels; this goroutine reads
	// answers. Only one goroutine sends on the stream.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { sendHostMessages(ctx, stream, h, stop, log) })
	defer func() {
		close(stop)
		wg.Wait()
	}()
	return receiveHostAnswers(ctx, stream, h, log)
}

// registerHost checks a host's registration and registers the host for
// servers (nil: every server).
func (s *Server) registerHost(ctx context.Context, reg service.HostRegistration) (*host, []string, error) {
	if !reg.Roots && !reg.Sampling && !reg.Elicitation {
		return nil, nil, codeError(service.InvalidArgument, "a host must answer at least one of roots, sampling, elicitation")
	}
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	servers := reg.Servers
	if p != nil && len(servers) == 0 {
		servers = p.ServerNames() // a host under a profile answers only for its servers
	}
	for _, n := range servers {
		if _, err := gateServer(p, n); err != nil {
			return nil, nil, err
		}
	}
	known := s.sup.Names()
	for _, n := range reg.Servers {
		if !slices.Contains(known, n) {
			return nil, nil, toError(&supervisor.UnknownServerError{Name: n})
		}
	}
	name, version := clientIdentityOf(ctx, reg.Client.Name, reg.Client.Version)
	var connID uint64
	sc := hostScope{root: cleanRoot(first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataRoot)))}
	if c := connFromContext(ctx); c != nil {
		connID = c.id
		c.setClient(name, version)
		c.setHost()
		sc.app = c.identityOf(first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataClientName)), reg.Client.Name)
	}
	return s.hosts.registerFor(connID, name, sc, servers, hostCaps{
		roots: reg.Roots, sampling: reg.Sampling, elicitation: reg.Elicitation,
		elicitationURL: reg.ElicitationURL,
	}), servers, nil
}

// sendHostMessages writes h's calls, cancels and notifications to stream until stop is
// closed, ctx ends or a send fails.
func sendHostMessages(ctx context.Context, stream hostConn,
	h *host, stop <-chan struct{}, log *zap.Logger) {
	for {
		var msg *mcpdv1.HostResponse
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case m := <-h.out:
			switch m := m.(type) {
			case hostCall:
				msg = &mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Call{Call: &mcpdv1.HostCall{
					CallId: m.id, Server: m.server, Method: m.method, ParamsJson: string(m.params),
				}}}
			case hostCancel:
				msg = &mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Cancel{Cancel: &mcpdv1.HostCancel{
					CallId: m.id, Reason: m.reason,
				}}}
			case hostNotice:
				msg = &mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Notification{Notification: &mcpdv1.HostNotification{
					Server: m.server, Method: m.method, ParamsJson: string(m.params),
				}}}
			}
		}
		if err := stream.Send(msg); err != nil {
			log.Debug("host send failed", zap.Error(err))
			return
		}
	}
}

// receiveHostAnswers delivers the answers read from stream to h's calls
// until the app ends the stream.
func receiveHostAnswers(ctx context.Context, stream hostConn,
	h *host, log *zap.Logger) error {
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			log.Debug("host unregistered")
			return nil
		}
		if err != nil {
			log.Debug("host stream failed", zap.Error(err))
			return nil
		}
		a := in.GetAnswer()
		if a == nil {
			return codeError(service.InvalidArgument, "only answers may follow the registration")
		}
		h.deliver(a.GetCallId(), hostAnswerOf(a))
	}
}

// hostAnswerOf is the answer a host sent, as the waiting call takes it.
func hostAnswerOf(a *mcpdv1.HostAnswer) hostAnswer {
	if e := a.GetError(); e != nil {
		rerr := &jsonrpc.Error{Code: e.GetCode(), Message: e.GetMessage()}
		if e.GetDataJson() != "" && json.Valid([]byte(e.GetDataJson())) {
			rerr.Data = json.RawMessage(e.GetDataJson())
		}
		return hostAnswerFrom(nil, rerr)
	}
	return hostAnswerFrom(stringBytes(a.GetResultJson()), nil)
}

// hostAnswerFrom is a host's result or error, as the waiting call takes
// it: a result that is no JSON object is the host's internal error.
func hostAnswerFrom(result json.RawMessage, rerr *jsonrpc.Error) hostAnswer {
	if rerr != nil {
		return hostAnswer{err: &session.RPCError{Code: rerr.Code, Message: rerr.Message, Data: rerr.Data}}
	}
	res, err := jsonObjectBytes("result_json", result)
	if err != nil {
		return hostAnswer{err: &session.RPCError{Code: jsonrpc.CodeInternalError, Message: "the host's answer is not a JSON object"}}
	}
	if res == nil {
		res = json.RawMessage("{}")
	}
	return hostAnswer{result: res}
}

// serverNamer is a request message naming one server.
type serverNamer interface{ GetServer() string }

// daemonTrailer marks every error status mcpd itself sends, so that a
// client tells mcpd's UNAVAILABLE (a server that is down names it) from a
// connection to mcpd that failed, which has no trailer.
var daemonTrailer = metadata.Pairs(mcpdv1.MetadataDaemon, "1")

// trackUnary records the app's unary call on a server as in flight, so
// that its children's requests prefer this app as host.
func (s *Server) trackUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	ctx = s.withScope(ctx, callClientName(req)) // instances.go
	if n, ok := req.(serverNamer); ok {
		defer s.inFlight(ctx, n.GetServer())()
	}
	resp, err = handler(ctx, req)
	if err != nil {
		_ = grpc.SetTrailer(ctx, daemonTrailer)
	}
	return resp, err
}

// inFlight records a call of ctx's app on server as in flight, so that
// the server's requests prefer the app as host, until the returned func
// is called. Every door's calls are tracked through it.
func (s *Server) inFlight(ctx context.Context, server string) (end func()) {
	c := connFromContext(ctx)
	if c == nil {
		return func() {}
	}
	f := s.hosts.beginCall(server, c.id)
	return func() { s.hosts.endCall(f) }
}

// trackStream does what trackUnary does for streaming calls, once their
// request message has been received.
func (s *Server) trackStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if err != nil {
			ss.SetTrailer(daemonTrailer)
		}
	}()
	ss = s.scopeStream(ss) // instances.go
	c := connFromContext(ss.Context())
	if c == nil {
		return handler(srv, ss)
	}
	ts := &trackedStream{ServerStream: ss, s: s, conn: c.id}
	defer ts.end()
	return handler(srv, ts)
}

// trackedStream begins tracking at the first received message that names a
// server.
type trackedStream struct {
	grpc.ServerStream
	s    *Server
	conn uint64

	mu     sync.Mutex
	began  bool
	flight flightKey
}

func (t *trackedStream) RecvMsg(m any) error {
	err := t.ServerStream.RecvMsg(m)
	if err != nil {
		return err
	}
	if n, ok := m.(serverNamer); ok {
		t.mu.Lock()
		if !t.began {
			t.began = true
			t.flight = t.s.hosts.beginCall(n.GetServer(), t.conn)
		}
		t.mu.Unlock()
	}
	return nil
}

func (t *trackedStream) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.began {
		t.s.hosts.endCall(t.flight)
	}
}
