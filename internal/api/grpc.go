package api

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// HealthService is the name under which the health service reports the
// Mcpd service; the empty name reports the daemon as a whole.
const HealthService = "mcpd.v1.Mcpd"

// MaxRequestSize is the largest message an app may send to mcpd, in
// bytes: the default maxLineSize (32 MiB), so that a request can be as
// large as the largest response mcpd accepts from a child by default
// (grpc-go's own default is 4 MiB). A larger message is refused with
// RESOURCE_EXHAUSTED. mcpd sends messages of any size; an app that expects
// results over its gRPC library's default receive limit (4 MiB in grpc-go
// and grpc-js) raises that limit.
const MaxRequestSize = transport.DefaultMaxLineSize

// Flow-control windows of the gRPC server, for what apps send: credit, not
// memory that is allocated up front.
const (
	serverStreamWindow = 4 << 20
	serverConnWindow   = 16 << 20
)

// streamWorkers is how many goroutines gRPC keeps to run requests on. A
// request otherwise runs on a goroutine of its own, whose stack grows from
// the runtime's smallest through mcpd's call path on every request (4.4%
// of mcpd's CPU with 16 apps calling); a worker's stack has grown once. A
// request finding no idle worker (all busy, or held by long streams such
// as Subscribe) still gets a goroutine of its own: with 16 workers and 64
// apps calling, three calls in four did, and the stack copies were 5% of
// mcpd's CPU again. An idle worker costs a parked goroutine.
const streamWorkers = 64

// keepaliveMinTime is the shortest interval between an app's keepalive
// pings that the server accepts, with or without calls in flight.
// grpc-go's default (5 minutes, and no pings at all without a call) makes
// it answer the keepalive of a long-lived Subscribe, Host or FollowLogs
// stream (grpc-js "grpc.keepalive_time_ms", grpc-go
// keepalive.ClientParameters) with GOAWAY "too_many_pings" after the third
// early ping, which ends every call on the connection. On a local socket a
// ping costs next to nothing; the bound still stops a runaway client.
const keepaliveMinTime = time.Second

// NewGRPCServer returns a gRPC server for srv with the peer-credential
// check, connection tracking for GetStatus, the standard health service
// (SERVING), server reflection, so grpcurl works, requests of up to
// MaxRequestSize within the request memory budget, and app keepalives (keepaliveMinTime). Extra options are
// appended.
// It leaves grpc-go's process-wide logger alone: the daemon routes it with
// RouteGRPCLog.
func NewGRPCServer(svc *core.Service, log *zap.Logger, opts ...grpc.ServerOption) *grpc.Server {
	if log == nil {
		log = zap.NewNop()
	}
	srv := &Server{svc: svc}

	opts = append([]grpc.ServerOption{
		// The service learns of connections in the handshake rather
		// than from a stats.Handler, which would cost every RPC (apps.go).
		grpc.Creds(trackCredentials(svc, PeerCredentials(log.Named("peercred")))),
		// The request memory budget comes first, so that a refused
		// request is never tracked; then the call's context and its
		// tracking as the app's call in flight, which routes children's
		// requests to the right host (calls.go). The errors of all of
		// them, the service's, are said as gRPC statuses by the outermost
		// (errors.go).
		grpc.ChainUnaryInterceptor(statusUnary, srv.budgetUnary, srv.trackUnary),
		grpc.ChainStreamInterceptor(statusStream, srv.budgetStream, srv.trackStream),
		// Static flow-control windows: with them gRPC does no bandwidth
		// estimation, which costs a ping and its ack for every request an
		// app sends; on a local socket a large fixed window is all it
		// would find anyway.
		grpc.InitialWindowSize(serverStreamWindow),
		grpc.InitialConnWindowSize(serverConnWindow),
		grpc.MaxRecvMsgSize(MaxRequestSize),
		// Large MCP payloads are not copied out of the received message
		// (codec.go).
		grpc.ForceServerCodecV2(newRequestCodec()),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             keepaliveMinTime,
			PermitWithoutStream: true,
		}),
	}, opts...)
	gs := grpc.NewServer(opts...)
	mcpdv1.RegisterMcpdServer(gs, srv)

	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(HealthService, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)

	registerReflection(gs)
	return gs
}

// registerReflection serves server reflection (v1 and v1alpha, for older
// grpcurl builds) from mcpd.proto's documented descriptors, so that
// `grpcurl describe` shows the proto's comments.
func registerReflection(gs *grpc.Server) {
	opts := reflection.ServerOptions{Services: gs, DescriptorResolver: mcpdv1.DocumentedResolver{}}
	reflectionv1.RegisterServerReflectionServer(gs, reflection.NewServerV1(opts))
	reflectionv1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(opts))
}

// RouteGRPCLog sends grpc-go's process-wide internal logging to log (its
// chatty info level at debug), so that nothing unstructured reaches stdio.
// Call it once, before any other gRPC activity in the process; the logger
// must outlive every gRPC server and client of the process.
func RouteGRPCLog(log *zap.Logger) {
	grpclog.SetLoggerV2(&zapGRPCLogger{log: log})
}

func init() {
	// Until RouteGRPCLog routes it through zap, grpc-go logs nothing: its
	// default logger writes unstructured lines to stderr.
	grpclog.SetLoggerV2(&zapGRPCLogger{log: zap.NewNop()})
}

// zapGRPCLogger is a grpclog.LoggerV2 writing to zap with a constant message
// and the text in a field. grpc-go's info level is chatty (every connection)
// and goes to debug.
type zapGRPCLogger struct {
	log *zap.Logger
}

var _ grpclog.LoggerV2 = (*zapGRPCLogger)(nil)

func (l *zapGRPCLogger) Info(args ...any) {
	l.log.Debug("grpc", zap.String("grpc_message", fmt.Sprint(args...)))
}
func (l *zapGRPCLogger) Infoln(args ...any) { l.Info(sprintln(args...)) }
func (l *zapGRPCLogger) Infof(f string, args ...any) {
	l.Info(fmt.Sprintf(f, args...))
}
func (l *zapGRPCLogger) Warning(args ...any) {
	msg := fmt.Sprint(args...)
	if appWentAway(msg) {
		l.log.Debug("grpc", zap.String("grpc_message", msg))
		return
	}
	l.log.Warn("grpc", zap.String("grpc_message", msg))
}

// appWentAway reports whether a gRPC warning only says that an app closed
// its connection while a call of it was still open ("failed to write
// status: connection error: desc = \"transport is closing\""): an app
// that quits mid-stream is ordinary, and there is one such line per
// dropped stream.
func appWentAway(msg string) bool {
	return strings.Contains(msg, "transport is closing")
}
func (l *zapGRPCLogger) Warningln(args ...any) {
	l.Warning(sprintln(args...))
}
func (l *zapGRPCLogger) Warningf(f string, args ...any) { l.Warning(fmt.Sprintf(f, args...)) }
func (l *zapGRPCLogger) Error(args ...any) {
	l.log.Error("grpc", zap.String("grpc_message", fmt.Sprint(args...)))
}
func (l *zapGRPCLogger) Errorln(args ...any)          { l.Error(sprintln(args...)) }
func (l *zapGRPCLogger) Errorf(f string, args ...any) { l.Error(fmt.Sprintf(f, args...)) }
func (l *zapGRPCLogger) Fatal(args ...any) {
	l.log.Fatal("grpc", zap.String("grpc_message", fmt.Sprint(args...)))
}
func (l *zapGRPCLogger) Fatalln(args ...any)          { l.Fatal(sprintln(args...)) }
func (l *zapGRPCLogger) Fatalf(f string, args ...any) { l.Fatal(fmt.Sprintf(f, args...)) }

// V reports whether verbosity level v is enabled: only level 0, and only
// when debug logging is on.
func (l *zapGRPCLogger) V(v int) bool { return v <= 0 && l.log.Core().Enabled(zap.DebugLevel) }

// sprintln is fmt.Sprintln without the trailing newline.
func sprintln(args ...any) string { return strings.TrimSuffix(fmt.Sprintln(args...), "\n") }
