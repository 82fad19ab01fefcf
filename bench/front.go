package main

import (
	"context"
	"fmt"
	"net"
	"time"
)

// The front doors: the ways an MCP host reaches a server besides its own
// child (direct) and mcpd's gRPC API. Sections 1-3 and the CPU section
// measure each beside the direct column:
//
//	bridge      "mcpdctl bridge NAME" on stdio (bridgeclient.go)
//	http floor  a bare net/http relay to its own child, and a bare handler
//	            answering the cached tools/list bytes (httpfloor.go)
//	httpface    mcpd's own Streamable HTTP face, /servers/NAME/mcp on
//	            --http-listen, modern and stateless; on unless -httpface=false
//	httpface legacy  the same face in one legacy session (initialized once,
//	            Mcp-Session-Id on every request)
const (
	frontBridge         = "bridge"
	frontHTTPFloor      = "http floor"
	frontHTTPFace       = "httpface"
	frontHTTPFaceLegacy = "httpface legacy"
	// frontGRPCFloor is the stdio bridge's floor in the CPU section: a bare
	// gRPC client process on stdio (grpcfloor.go).
	frontGRPCFloor = "grpc floor"
)

// front is one running front door for one server.
type front struct {
	name string
	// echo calls the echo tool and list lists the tools (returning the
	// result's size); both may be called concurrently.
	echo func(ctx context.Context) error
	list func(ctx context.Context) (int, error)
	// pid is the front's own process whose CPU the CPU section counts (the
	// bridge, the HTTP floor); 0 when it has none.
	pid   int
	close func()
}

// startFronts starts the front doors for t on mcpd d; conns is how many
// concurrent requests the HTTP clients keep connections for. label names
// the bridge's CPU profile.
func (b *bench) startFronts(ctx context.Context, d *daemon, t target, conns int, label string) ([]*front, error) {
	var fronts []*front
	fail := func(err error) ([]*front, error) {
		closeFronts(fronts)
		return nil, err
	}
	br, err := b.startBridge(ctx, d.socket, t, label)
	if err != nil {
		return fail(err)
	}
	fronts = append(fronts, &front{
		name: frontBridge, pid: br.pid(), close: br.close,
		echo: br.echo,
		list: func(ctx context.Context) (int, error) {
			res, err := br.call(ctx, "tools/list", nil)
			return len(res), err
		},
	})
	fl, err := startHTTPFloor(b.reg, t, conns)
	if err != nil {
		return fail(err)
	}
	fronts = append(fronts, &front{
		name: frontHTTPFloor, close: fl.close, pid: fl.cmd.Process.Pid,
		echo: func(ctx context.Context) error { return fl.relay.echo(ctx, t.Name) },
		list: fl.list.listTools,
	})
	if d.httpAddr != "" {
		url := "http://" + d.httpAddr + "/servers/" + t.Name + "/mcp"
		hc := newHTTPClient(url, conns)
		fronts = append(fronts, &front{
			name: frontHTTPFace, close: hc.close,
			echo: func(ctx context.Context) error { return hc.echo(ctx, t.Name) },
			list: hc.listTools,
		})
		lc, err := newLegacyHTTPClient(ctx, url, conns)
		if err != nil {
			return fail(err)
		}
		fronts = append(fronts, &front{
			name: frontHTTPFaceLegacy, close: lc.close,
			echo: func(ctx context.Context) error { return lc.echo(ctx, t.Name) },
			list: lc.listTools,
		})
	}
	for _, f := range fronts { // warm: JIT, pools, mcpd's cache
		for range 20 {
			if err := f.echo(ctx); err != nil {
				return fail(fmt.Errorf("%s: %w", f.name, err))
			}
			if _, err := f.list(ctx); err != nil {
				return fail(fmt.Errorf("%s: %w", f.name, err))
			}
		}
	}
	return fronts, nil
}

// closeFronts stops every front.
func closeFronts(fronts []*front) {
	for _, f := range fronts {
		f.close()
	}
}

// freeLoopbackAddr returns a loopback address with a port free right now,
// for mcpd's --http-listen.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// frontCall is one front's sequential echo latency in section 1.
type frontCall struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	// AddedP50 is front − direct (median of per-round differences).
	AddedP50 float64 `json:"added_over_direct_p50_us"`
}

// frontList is one front's sequential tools/list latency in section 3.
type frontList struct {
	Name    string  `json:"name"`
	P50     float64 `json:"p50_us"`
	P99     float64 `json:"p99_us"`
	Speedup float64 `json:"direct_over_front"`
	Bytes   int     `json:"result_bytes"`
}

// frontRate is one front's throughput in section 2.
type frontRate struct {
	Name  string  `json:"name"`
	Rate  float64 `json:"calls_per_s"`
	Ratio float64 `json:"over_direct"`
}

// frontCallRows turns the per-round quantiles of the fronts (after the
// first `first` variants) into rows; direct is variant 0.
func frontCallRows(fronts []*front, first int, p50s, p99s [][]time.Duration) []frontCall {
	rows := make([]frontCall, 0, len(fronts))
	for i, f := range fronts {
		v := first + i
		var added []time.Duration
		for r := range p50s[v] {
			added = append(added, p50s[v][r]-p50s[0][r])
		}
		rows = append(rows, frontCall{Name: f.name, P50: us(medianDur(p50s[v])), P99: us(medianDur(p99s[v])), AddedP50: us(medianDur(added))})
	}
	return rows
}
