package api

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Transports an app reaches mcpd by, as GetStatus reports them.
const (
	TransportGRPC = "grpc"
	TransportHTTP = "http"
	// TransportRelay is an "mcpdctl bridge" on mcpd's bridge socket, whose
	// bridge runs inside mcpd (internal/bridgeface).
	TransportRelay = "relay"
	// TransportDashboard is mcpd's own dashboard page (internal/dashboard):
	// an operator's tool calls, not a host's; the sharing figure leaves it
	// out.
	TransportDashboard = "dashboard"
)

// LocalApp is an app served inside the daemon's process rather than over
// the API socket: one connection of an MCP host to mcpd's HTTP face, or
// of an "mcpdctl bridge" to mcpd's bridge socket. Its
// calls get what the gRPC server's interceptors give a socket connection
// (the request memory budget, the calls in flight that route children's
// requests to hosts), and it is listed by GetStatus until Close. Its
// methods are safe for concurrent use.
type LocalApp struct {
	s      *Server
	conn   *appConn
	peer   *peer.Peer
	closed atomic.Bool
}

// NewLocalApp registers an app of the given transport whose process is pid
// (0 when unknown) and whose peer runs as uid; name is shown until its
// calls name it.
func (s *Server) NewLocalApp(transport, name string, uid, pid int) *LocalApp {
	a := &LocalApp{s: s}
	a.conn = &appConn{
		id:          s.apps.nextID.Add(1),
		pid:         pid,
		connectedAt: s.apps.now(),
		transport:   transport,
		open:        func() bool { return !a.closed.Load() },
		name:        name,
	}
	a.peer = &peer.Peer{AuthInfo: AuthInfo{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		UID:            uid,
		PID:            pid,
		app:            a.conn,
	}}
	s.apps.add(a.conn)
	return a
}

// Identify fixes the app's identity for shared servers (instances.go)
// before its first call: host is its host's own name (its clientInfo
// name; "" when unknown), and session says that the app is one HTTP
// session, told apart from others of the same host by the session rather
// than by its process. Every call of the app then reaches the same
// instance of a "client" server, whatever its request says.
func (a *LocalApp) Identify(host string, session bool) { a.conn.identify(host, session) }

// Close ends the app: GetStatus no longer lists it.
func (a *LocalApp) Close() { a.closed.Store(true) }

// Context returns ctx carrying the app's identity, as a gRPC handler's
// context carries its connection's.
func (a *LocalApp) Context(ctx context.Context) context.Context {
	return peer.NewContext(ctx, a.peer)
}

// Unary runs call, a unary handler of the Server, for req as the gRPC
// server would: within the request memory budget and tracked as a call of
// this app on the server req names.
func (a *LocalApp) Unary(ctx context.Context, req any, call func(ctx context.Context, req any) (any, error)) (any, error) {
	ctx = a.Context(ctx)
	return a.s.budgetUnary(ctx, req, nil, func(ctx context.Context, req any) (any, error) {
		return a.s.trackUnary(ctx, req, nil, call)
	})
}

// Stream runs call, a streaming handler of the Server, on ss as the gRPC
// server would; ss's context must come from Context. method is the RPC's
// full name (mcpdv1.Mcpd_*_FullMethodName) and clientStream whether the
// app streams its messages (Host): both decide what the budget charges.
// The handler receives its first message through ss.RecvMsg, which is
// where the budget and call tracking see it.
func (a *LocalApp) Stream(ss grpc.ServerStream, method string, clientStream bool, call func(ss grpc.ServerStream) error) error {
	info := &grpc.StreamServerInfo{FullMethod: method, IsClientStream: clientStream, IsServerStream: true}
	return a.s.budgetStream(a.s, ss, info, func(srv any, ss grpc.ServerStream) error {
		return a.s.trackStream(srv, ss, info, func(_ any, ss grpc.ServerStream) error { return call(ss) })
	})
}
