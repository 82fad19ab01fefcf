package bridge

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// GRPCBackend is mcpd reached over its Unix socket.
type GRPCBackend struct {
	conn       *grpc.ClientConn
	client     mcpdv1.McpdClient
	socket     string
	notRunning func() error
}

// DialGRPC prepares a connection to mcpd at socket (it connects lazily and
// reconnects soon after mcpd comes back), with opts after those. notRunning
// is the error for an mcpd that is not there.
func DialGRPC(socket string, notRunning func() error, opts ...apiclient.Option) (*GRPCBackend, error) {
	opts = append([]apiclient.Option{apiclient.Reconnect(retryMin, retryMax, readyTimeout)}, opts...)
	conn, err := apiclient.Dial(socket, opts...)
	if err != nil {
		return nil, err
	}
	return &GRPCBackend{conn: conn, client: mcpdv1.NewMcpdClient(conn), socket: socket, notRunning: notRunning}, nil
}

// Close closes the connection.
func (g *GRPCBackend) Close() error { return g.conn.Close() }

func (g *GRPCBackend) ListServers(ctx context.Context, in *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return grpcResult(g.client.ListServers(outgoing(ctx), in))
}

func (g *GRPCBackend) ListTools(ctx context.Context, in *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	return grpcResult(g.client.ListTools(outgoing(ctx), in))
}

func (g *GRPCBackend) ListPrompts(ctx context.Context, in *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	return grpcResult(g.client.ListPrompts(outgoing(ctx), in))
}

func (g *GRPCBackend) ListResources(ctx context.Context, in *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	return grpcResult(g.client.ListResources(outgoing(ctx), in))
}

func (g *GRPCBackend) ListResourceTemplates(ctx context.Context, in *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	return grpcResult(g.client.ListResourceTemplates(outgoing(ctx), in))
}

func (g *GRPCBackend) ReadResource(ctx context.Context, in *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	return grpcResult(g.client.ReadResource(outgoing(ctx), in))
}

func (g *GRPCBackend) UpdateSubscription(ctx context.Context, in *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	return grpcResult(g.client.UpdateSubscription(outgoing(ctx), in))
}

func (g *GRPCBackend) SendRequest(ctx context.Context, in *mcpdv1.SendRequestRequest) (RecvStream[mcpdv1.CallToolEvent], error) {
	return grpcStream[mcpdv1.CallToolEvent](g.client.SendRequest(outgoing(ctx), in))
}

func (g *GRPCBackend) Subscribe(ctx context.Context, in *mcpdv1.SubscribeRequest) (RecvStream[mcpdv1.SubscriptionEvent], error) {
	return grpcStream[mcpdv1.SubscriptionEvent](g.client.Subscribe(outgoing(ctx), in))
}

func (g *GRPCBackend) Host(ctx context.Context) (HostStream, error) {
	return grpcHost(g.client.Host(outgoing(ctx)))
}

// NotRunning is the error that says mcpd is not there.
func (g *GRPCBackend) NotRunning() error { return g.notRunning() }

// Down reports whether the connection to mcpd is not up.
func (g *GRPCBackend) Down() bool { return g.conn.GetState() != connectivity.Ready }

// Ready waits until the connection to mcpd is up, reconnecting at once if
// it was down; it fails with the "not running" error after a short while.
func (g *GRPCBackend) Ready(ctx context.Context) error {
	if g.conn.GetState() == connectivity.Ready {
		return nil // the usual case: no timer, no wait
	}
	if _, err := os.Stat(g.socket); errors.Is(err, fs.ErrNotExist) {
		return g.notRunning() // no need to wait: mcpd is not there
	}
	wctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	failures := 0
	for {
		s := g.conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			g.conn.Connect()
		case connectivity.TransientFailure:
			if failures++; failures > 2 {
				return g.notRunning()
			}
			g.conn.ResetConnectBackoff()
		}
		if !g.conn.WaitForStateChange(wctx, s) {
			return g.notRunning()
		}
	}
}

// Error turns a failed call, a gRPC status read back as the service's
// error (apiclient.ServiceError), into the JSON-RPC error the host sees.
func (g *GRPCBackend) Error(ctx context.Context, err error, server string) *jsonrpc.Error {
	return RPCError(ctx, apiclient.ServiceError(err), server, g.Down, g.notRunning)
}

// Reason is the message of a failed RPC, without its code.
func (g *GRPCBackend) Reason(err error) string {
	if err == nil {
		return ""
	}
	return apiclient.ServiceError(err).Error()
}
