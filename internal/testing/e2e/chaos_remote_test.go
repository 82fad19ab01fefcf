package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Timing of chaosRemote's outages: it is down this long, then up this
// long, over and over while the chaos runs.
const (
	chaosRemoteDown = 1500 * time.Millisecond
	chaosRemoteUp   = 2500 * time.Millisecond
	// chaosRemoteBack bounds how long after the server is back a call to
	// it must succeed: "a call tries at once" (a network failure backs off
	// without a crash-loop hold), so well within a second; asserted
	// generously, plus the test's own scheduling lag.
	chaosRemoteBack = 3 * time.Second
)

// chaosRemote is the remote server of TestChaos: the Go SDK's Streamable
// HTTP server (stateful sessions), killed and started again on the same
// port several times while the apps call it.
type chaosRemote struct {
	t    *testing.T
	addr string // HOST:PORT, the same every time
	p    *upstream.Process
	up   bool
	next time.Time // when to go down or come back

	outages int
	backIn  []time.Duration // per return: until a call succeeded
}

func startChaosRemote(t *testing.T) *chaosRemote {
	bridgeBins(t)
	p := upstream.GoSDK(t, gosdkBin)
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &chaosRemote{t: t, addr: u.Host, p: p, up: true}
}

// child is the server as TestChaos calls it.
func (r *chaosRemote) child() chaosChild {
	return chaosChild{config: map[string]any{"url": r.p.URL}, calls: []chaosCall{echoCall, echoCall,
		{tool: "sleep", args: map[string]any{"ms": 600000}}}}
}

// start begins the outages: the first one chaosRemoteUp from now.
func (r *chaosRemote) start() { r.next = time.Now().Add(chaosRemoteUp) }

// tick takes the server down or brings it back when it is time, on the
// test's goroutine. Once back, a call must succeed within chaosRemoteBack.
func (r *chaosRemote) tick(ctl mcpdv1.McpdClient, log *chaosLog) {
	if time.Now().Before(r.next) {
		return
	}
	if r.up {
		r.p.Kill() // no goodbye: connections reset, the port refuses
		r.up, r.outages = false, r.outages+1
		r.next = time.Now().Add(chaosRemoteDown)
		return
	}
	r.restart()
	back := time.Now()
	r.next = back.Add(chaosRemoteUp)
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		token := fmt.Sprintf("back%d-%d", r.outages, n)
		resp, _, err := callTool(ctx, ctl, &mcpdv1.CallToolRequest{Server: "remote", Tool: "echo", ArgumentsJson: echoArgs(token),
			Options: &mcpdv1.CallOptions{TimeoutMs: 1000}})
		cancel()
		if err == nil && resp.GetError() == nil {
			if got, ok := resultText(resp.GetResultJson()); ok && got == token {
				r.backIn = append(r.backIn, time.Since(back))
				return
			}
		}
		if time.Since(back) > 10*time.Second {
			log.problem("remote back after outage %d: no call succeeded within 10s (last: %v %v)", r.outages, resp, err)
			r.backIn = append(r.backIn, time.Since(back))
			return
		}
		time.Sleep(20 * time.Millisecond) // pacing between tries
	}
}

// restart starts the server again on its port.
func (r *chaosRemote) restart() {
	r.p = upstream.GoSDKAt(r.t, gosdkBin, r.addr)
	r.up = true
}

// finish brings the server back if it is down, and checks the returns.
func (r *chaosRemote) finish(log *chaosLog) {
	if !r.up {
		r.restart()
	}
	r.t.Logf("remote: %d outages; a call succeeded %v after each return", r.outages, r.backIn)
	if r.outages < 2 {
		log.problem("remote: %d outages, want several (raise -chaos.duration)", r.outages)
	}
	slack := min(log.lag, chaosMaxLagAllowance)
	for i, d := range r.backIn {
		if d > chaosRemoteBack+slack {
			log.problem("remote: after return %d the first call succeeded only after %v, want within %v", i+1, d.Round(time.Millisecond), chaosRemoteBack+slack)
		}
	}
}
