package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// BenchmarkFanout100 measures the latency from the child writing a
// notifications/resources/updated (its "ts" param, stamped just before the
// write) to each of 100 subscribed apps (10 connections × 10 streams, real
// gRPC on a Unix socket) receiving it. It reports p50 and p99 over every
// (notification, app) pair.
func BenchmarkFanout100(b *testing.B) {
	const apps = 100
	sup := supervisor.New(supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy,quiet")}, Logger: zap.NewNop()})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- sup.Run(ctx) }()
	defer func() { cancel(); <-runDone }()
	path := fmt.Sprintf("/tmp/mcpd-bench-%d/s/mcpd.sock", time.Now().UnixNano())
	ln, err := socket.Listen(path)
	if err != nil {
		b.Fatal(err)
	}
	gs := api.NewGRPCServer(core.New(sup, core.Options{Logger: zap.NewNop()}), zap.NewNop())
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }()
	defer func() { gs.Stop(); <-served }()

	// Receipts are parsed after the run: a JSON decode on every app's
	// goroutine would take CPU from the apps still waiting.
	type receipt struct {
		at     int64
		params string
	}
	var (
		mu       sync.Mutex
		receipts []receipt
		wg       sync.WaitGroup
		received = make(chan struct{}, apps*64)
	)
	sctx, scancel := context.WithCancel(context.Background())
	defer func() { scancel(); wg.Wait() }()
	req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{"fake://r/0"}}
	for i := range apps / 10 {
		conn, err := apiclient.Dial(path)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		c := mcpdv1.NewMcpdClient(conn)
		for range 10 {
			st, err := c.Subscribe(sctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := st.Recv(); err != nil { // the acknowledgement
				b.Fatalf("app %d: %v", i, err)
			}
			wg.Go(func() {
				for {
					ev, err := st.Recv()
					if err != nil {
						return
					}
					now := time.Now().UnixNano()
					mu.Lock()
					receipts = append(receipts, receipt{now, ev.GetParamsJson()})
					mu.Unlock()
					received <- struct{}{}
				}
			})
		}
	}
	call := func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		resp, err := sup.Call(cctx, "s", sessionRequest("tools/call", `{"name":"burst","arguments":{"n":1}}`), supervisor.CallOptions{})
		if err != nil || resp.Error != nil {
			b.Fatalf("burst: %v %v", err, resp)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		call()
		for range apps {
			<-received
		}
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	latencies := make([]time.Duration, 0, len(receipts))
	for _, r := range receipts {
		var p struct{ TS int64 }
		if err := json.Unmarshal([]byte(r.params), &p); err != nil || p.TS == 0 {
			b.Fatalf("notification params %s: no ts (%v)", r.params, err)
		}
		latencies = append(latencies, time.Duration(r.at-p.TS))
	}
	slices.Sort(latencies)
	if len(latencies) > 0 {
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
	}
}
