package bridgegrpc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Timing: mcpd restarts must be noticed quickly.
const (
	readyTimeout = 3 * time.Second
	retryMin     = 100 * time.Millisecond
	retryMax     = 2 * time.Second
)

// Backend is mcpd reached over its Unix socket.
type Backend struct {
	conn       *grpc.ClientConn
	client     mcpdv1.McpdClient
	socket     string
	notRunning func() error
}

var _ bridge.Backend = (*Backend)(nil)

// Dial prepares a connection to mcpd at socket (it connects lazily and
// reconnects soon after mcpd comes back), with opts after those. notRunning
// is the error for an mcpd that is not there.
func Dial(socket string, notRunning func() error, opts ...apiclient.Option) (*Backend, error) {
	opts = append([]apiclient.Option{apiclient.Reconnect(retryMin, retryMax, readyTimeout)}, opts...)
	conn, err := apiclient.Dial(socket, opts...)
	if err != nil {
		return nil, err
	}
	return &Backend{conn: conn, client: mcpdv1.NewMcpdClient(conn), socket: socket, notRunning: notRunning}, nil
}

// Close closes the connection.
func (g *Backend) Close() error { return g.conn.Close() }

// outgoing adds the profile and the root of ctx (bridge.WithProfile,
// bridge.WithRoot), if any, to its gRPC request metadata.
func outgoing(ctx context.Context) context.Context {
	return apiclient.Outgoing(ctx, apiclient.Metadata{Profile: bridge.ProfileFrom(ctx), Root: bridge.RootFrom(ctx)})
}

// ListServers is the ListServers RPC.
func (g *Backend) ListServers(ctx context.Context) (*service.Servers, error) {
	resp, err := g.client.ListServers(outgoing(ctx), &mcpdv1.ListServersRequest{})
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	return apiconv.ServersOf(resp), nil
}

// List is the List RPC of method (tools/list, …).
func (g *Backend) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	ctx, opts := outgoing(ctx), apiconv.OptionsToProto(o)
	var lists []*mcpdv1.ServerList
	var err error
	switch method {
	case "tools/list":
		var r *mcpdv1.ListToolsResponse
		r, err = g.client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "prompts/list":
		var r *mcpdv1.ListPromptsResponse
		r, err = g.client.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "resources/list":
		var r *mcpdv1.ListResourcesResponse
		r, err = g.client.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: server, Options: opts})
		lists = r.GetServers()
	case "resources/templates/list":
		var r *mcpdv1.ListResourceTemplatesResponse
		r, err = g.client.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: server, Options: opts})
		lists = r.GetServers()
	default:
		return nil, errors.New("no list rpc for " + method)
	}
	return apiconv.ServerListsOf(lists), apiclient.ServiceError(err)
}

// Read is the ReadResource RPC.
func (g *Backend) Read(ctx context.Context, r service.Read) (*service.Response, error) {
	resp, err := g.client.ReadResource(outgoing(ctx), apiconv.ReadToProto(r))
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	return apiconv.ResponseOf(resp), nil
}

// UpdateWatch is the UpdateSubscription RPC.
func (g *Backend) UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	resp, err := g.client.UpdateSubscription(outgoing(ctx), &mcpdv1.UpdateSubscriptionRequest{
		SubscriptionId: u.ID, AddResourceUris: u.Add, RemoveResourceUris: u.Remove,
	})
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	return apiconv.ServerAcksOf(resp.GetServers()), nil
}

// NotRunning is the error that says mcpd is not there.
func (g *Backend) NotRunning() error { return g.notRunning() }

// Down reports whether the connection to mcpd is not up.
func (g *Backend) Down() bool { return g.conn.GetState() != connectivity.Ready }

// Ready waits until the connection to mcpd is up, reconnecting at once if
// it was down; it fails with the "not running" error after a short while.
func (g *Backend) Ready(ctx context.Context) error {
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
