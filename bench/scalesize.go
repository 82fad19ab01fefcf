package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// scaleSizeRow is an echo of size bytes (sent and returned) through mcpd's
// CallToolUnary against the same call on a direct stdio client.
type scaleSizeRow struct {
	Bytes  int     `json:"result_bytes"`
	Calls  int     `json:"calls"`
	McpdMB float64 `json:"mcpd_mb_per_s"`
	Direct float64 `json:"direct_mb_per_s"`
	Ratio  float64 `json:"mcpd_over_direct"`
	// AllocPerByte is mcpd's heap allocation (go_memstats_alloc_bytes_total)
	// per byte carried (request + result): about the copies it makes.
	AllocPerByte float64 `json:"mcpd_alloc_bytes_per_byte"`
	// Error is why this size could not be measured (the child failed it).
	Error string `json:"error,omitempty"`
}

func (b *bench) scaleSizes() []int {
	if b.o.smoke {
		return []int{1 << 10, 1 << 20}
	}
	return []int{1 << 10, 1 << 20, 30_000_000}
}

// scaleSize measures the result-size curve on a fresh daemon.
func (b *bench) scaleSize(ctx context.Context) error {
	t := b.targets()[0]
	b.progress("scale: result size")
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	d, err := startDaemonWith(ctx, b.reg, b.o.mcpd, map[string]serverConfig{t.Name: {Command: t.Command, Args: t.Args}},
		daemonSettings{metricsAddr: addr})
	if err != nil {
		return err
	}
	defer d.stop()
	conn, err := dialApp(d.socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := mcpdv1.NewMcpdClient(conn)
	dc, _, err := startDirect(ctx, b.reg, t)
	if err != nil {
		return err
	}
	defer dc.close()
	for _, size := range b.scaleSizes() {
		row, err := scaleSizeAt(ctx, d, client, dc, t.Name, size)
		if err != nil && size > 1<<20 {
			// The largest point is at the edge of what the child handles:
			// recorded, and the curve ends here.
			row.Error = err.Error()
			b.rep.Scale.Sizes = append(b.rep.Scale.Sizes, row)
			break
		}
		if err != nil {
			return fmt.Errorf("%d bytes: %w", size, err)
		}
		b.rep.Scale.Sizes = append(b.rep.Scale.Sizes, row)
	}
	return nil
}

func scaleSizeAt(ctx context.Context, d *daemon, client mcpdv1.McpdClient, dc *direct, server string, size int) (scaleSizeRow, error) {
	msg := strings.Repeat("x", size)
	args := `{"message":"` + msg + `"}`
	params := json.RawMessage(`{"name":"echo","arguments":` + args + `}`)
	calls := max(min(200, (64<<20)/size), 3)
	row := scaleSizeRow{Bytes: size, Calls: calls}
	opts := []grpc.CallOption{grpc.MaxCallRecvMsgSize(64 << 20), grpc.MaxCallSendMsgSize(64 << 20)}
	viaMcpd := func() error {
		resp, err := client.CallToolUnary(ctx, &mcpdv1.CallToolRequest{Server: server, Tool: "echo", ArgumentsJson: args}, opts...)
		if err != nil {
			return fmt.Errorf("echo through mcpd: %w", err)
		}
		if e := resp.GetError(); e != nil {
			return fmt.Errorf("echo through mcpd: mcp error %d: %s", e.GetCode(), e.GetMessage())
		}
		if len(resp.GetResultJson()) < size {
			return fmt.Errorf("echo through mcpd: %d bytes back, want %d", len(resp.GetResultJson()), size)
		}
		return nil
	}
	viaDirect := func() error {
		res, err := dc.call(ctx, "tools/call", params)
		if err == nil && len(res) < size {
			err = fmt.Errorf("%d bytes back, want %d", len(res), size)
		}
		return err
	}
	for _, f := range []func() error{viaMcpd, viaDirect} { // warm
		if err := f(); err != nil {
			return row, err
		}
	}
	const allocs = "go_memstats_alloc_bytes_total"
	m0, err := d.scrapeMetrics(ctx, allocs)
	if err != nil {
		return row, err
	}
	var mcpdRates, directRates []float64
	for r := range 3 {
		for _, v := range rotate(2, r) {
			f := []func() error{viaMcpd, viaDirect}[v]
			start := time.Now()
			for range calls {
				if err := f(); err != nil {
					return row, err
				}
			}
			rate := float64(size*calls) / 1e6 / time.Since(start).Seconds()
			if v == 0 {
				mcpdRates = append(mcpdRates, rate)
			} else {
				directRates = append(directRates, rate)
			}
		}
	}
	m1, err := d.scrapeMetrics(ctx, allocs)
	if err != nil {
		return row, err
	}
	row.McpdMB, row.Direct = medianF(mcpdRates), medianF(directRates)
	row.Ratio = ratio(row.McpdMB, row.Direct)
	row.AllocPerByte = (m1[allocs] - m0[allocs]) / float64(2*size*calls*3)
	return row, nil
}
