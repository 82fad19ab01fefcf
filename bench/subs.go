package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/session"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Sections 5 (fan-out) and 6 (recovery) use the demo server's touch tool:
// it increments demo://counter and sends notifications/resources/updated
// for it with the send time (Unix nanoseconds, taken just before the
// write) and the counter value in _meta.
const (
	counterURI = "demo://counter"
	metaSent   = "mcpd.dev/sentUnixNano"
	metaCount  = "mcpd.dev/count"
)

// fanOutApps is section 5's numbers of subscribed apps.
var fanOutApps = []int{1, 10, 100}

// eventWait bounds every wait for a notification or a lifecycle event.
const eventWait = 30 * time.Second

// parseTouch returns the send time and counter value of a touch
// notification's params. It scans for the two _meta keys rather than
// decoding the JSON: it runs on every app's receiving goroutine, and with
// 100 apps a JSON decode each (about 2 µs and 19 allocations) is CPU taken
// from the apps still waiting for the same notification on these 2 cores.
// The bare fan-out's receipts cost as little (parseBareFire).
func parseTouch(params string) (sent time.Time, count int64, err error) {
	ns, ok1 := jsonIntAfterKey(params, metaSent)
	n, ok2 := jsonIntAfterKey(params, metaCount)
	if !ok1 || !ok2 {
		return time.Time{}, 0, fmt.Errorf("touch notification params %.200q: no integer %s/%s in _meta", params, metaSent, metaCount)
	}
	return time.Unix(0, ns), n, nil
}

// jsonIntAfterKey returns the integer that follows the object key key in
// the JSON text s ("key": 123), the first time key appears as a key.
func jsonIntAfterKey(s, key string) (int64, bool) {
	quoted := `"` + key + `"`
	for from := 0; ; {
		i := strings.Index(s[from:], quoted)
		if i < 0 {
			return 0, false
		}
		rest := strings.TrimLeft(s[from+i+len(quoted):], " \t\r\n")
		from += i + len(quoted)
		if !strings.HasPrefix(rest, ":") {
			continue // the text of a value, not a key
		}
		rest = strings.TrimLeft(rest[1:], " \t\r\n")
		end := 0
		if end < len(rest) && rest[end] == '-' {
			end++
		}
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		v, err := strconv.ParseInt(rest[:end], 10, 64)
		return v, err == nil
	}
}

// receipt is one touch notification an app received.
type receipt struct {
	count   int64
	latency time.Duration
}

// touchThroughMcpd calls the demo server's touch tool through mcpd.
func touchThroughMcpd(ctx context.Context, c mcpdv1.McpdClient, server string) error {
	stream, err := c.CallTool(ctx, &mcpdv1.CallToolRequest{Server: server, Tool: "touch", ArgumentsJson: "{}"})
	if err != nil {
		return fmt.Errorf("call touch on %s through mcpd: %w", server, err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("call touch on %s through mcpd: %w", server, err)
		}
		if r := ev.GetResponse(); r != nil {
			if e := r.GetError(); e != nil {
				return fmt.Errorf("call touch on %s through mcpd: mcp error %d: %s", server, e.GetCode(), e.GetMessage())
			}
			return nil
		}
	}
}

// fanOutApp is one subscribed app (its own gRPC connection and stream).
type fanOutApp struct {
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan struct{}
}

// openFanOutApps subscribes n apps to demo://counter on server; every
// touch notification they receive goes to out (never blocking: out is
// drained by the caller).
func openFanOutApps(ctx context.Context, d *daemon, server string, n int, out chan<- receipt, errs chan<- error) ([]*fanOutApp, error) {
	var apps []*fanOutApp
	for i := range n {
		conn, err := dialApp(d.socket)
		if err != nil {
			closeFanOutApps(apps)
			return nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		a := &fanOutApp{conn: conn, cancel: cancel, done: make(chan struct{})}
		st, err := mcpdv1.NewMcpdClient(conn).Subscribe(sctx, &mcpdv1.SubscribeRequest{
			Servers: []string{server}, ResourceUris: []string{counterURI},
			Client: &mcpdv1.ClientInfo{Name: fmt.Sprintf("mcpd-bench-app-%d", i)},
		})
		if err == nil {
			var ack *mcpdv1.SubscriptionEvent
			if ack, err = st.Recv(); err == nil && len(ack.GetAck().GetServers()) == 1 {
				if e := ack.GetAck().GetServers()[0].GetError(); e != "" {
					err = errors.New(e)
				} else if len(ack.GetAck().GetServers()[0].GetResourceUris()) != 1 {
					err = fmt.Errorf("%s not acknowledged: %v", counterURI, ack)
				}
			}
		}
		if err != nil {
			cancel()
			_ = conn.Close()
			closeFanOutApps(apps)
			return nil, fmt.Errorf("subscribe app %d to %s on %s: %w", i, counterURI, server, err)
		}
		apps = append(apps, a)
		go func() { // owned: closeFanOutApps waits for done
			defer close(a.done)
			receiveAll(sctx, fmt.Sprintf("app %d subscription", i), st.Recv, touchReceipt, out, errs)
		}()
	}
	return apps, nil
}

// touchReceipt is the receipt of a touch notification (ok false for any
// other event).
func touchReceipt(ev *mcpdv1.SubscriptionEvent, now time.Time) (receipt, bool, error) {
	if ev.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED || ev.GetSynthetic() {
		return receipt{}, false, nil
	}
	sent, count, err := parseTouch(ev.GetParamsJson())
	if err != nil {
		return receipt{}, false, err
	}
	return receipt{count: count, latency: now.Sub(sent)}, true, nil
}

// receiveAll is an app's receiving loop: every message recv returns is
// timed on arrival and turned into a receipt by parse, which goes to out
// (parse errors to errs, not ending the loop), until the stream ends; its
// error goes to errs unless the app was closed (sctx done). errs never
// blocks.
func receiveAll[T any](sctx context.Context, name string, recv func() (T, error),
	parse func(T, time.Time) (receipt, bool, error), out chan<- receipt, errs chan<- error) {
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for {
		m, err := recv()
		if err != nil {
			if sctx.Err() == nil {
				report(fmt.Errorf("%s: %w", name, err))
			}
			return
		}
		r, ok, err := parse(m, time.Now())
		if err != nil {
			report(err)
		}
		if !ok {
			continue
		}
		select {
		case out <- r:
		case <-sctx.Done():
			return
		}
	}
}

func closeFanOutApps(apps []*fanOutApp) {
	for _, a := range apps {
		a.cancel()
	}
	for _, a := range apps {
		<-a.done
		_ = a.conn.Close()
	}
}

// awaitTouch waits until want receipts of counter value count arrived and
// returns their latencies (receipts of earlier touches are skipped).
func awaitTouch(ctx context.Context, in <-chan receipt, errs <-chan error, count int64, want int) (latencies, error) {
	timeout := time.NewTimer(eventWait)
	defer timeout.Stop()
	out := make(latencies, 0, want)
	for len(out) < want {
		select {
		case r := <-in:
			if r.count == count {
				out = append(out, r.latency)
			}
		case err := <-errs:
			return nil, err
		case <-timeout.C:
			return nil, fmt.Errorf("only %d of %d apps received touch %d within %s", len(out), want, count, eventWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// directListener is section 5's baseline: one app with its own demo child,
// listening for demo://counter over stdio (what a host does today).
type directListener struct {
	dc     *direct
	listen *session.Listen
}

func startDirectListener(ctx context.Context, reg *registry, t target, out chan<- receipt, errs chan<- error) (*directListener, error) {
	dc, _, err := startDirect(ctx, reg, t)
	if err != nil {
		return nil, err
	}
	filter := json.RawMessage(`{"resourceSubscriptions":["` + counterURI + `"]}`)
	lctx, cancel := context.WithTimeout(ctx, eventWait)
	defer cancel()
	l, err := dc.sess.Listen(lctx, filter, func(n session.Notification) {
		now := time.Now() // on the session's reader goroutine
		if n.Method != "notifications/resources/updated" {
			return
		}
		sent, count, err := parseTouch(string(n.Params))
		if err != nil {
			select {
			case errs <- err:
			default:
			}
			return
		}
		select {
		case out <- receipt{count: count, latency: now.Sub(sent)}:
		default: // the buffer is sized for one touch at a time
		}
	})
	if err != nil {
		dc.close()
		return nil, fmt.Errorf("listen on %s directly: %w", t.Name, err)
	}
	return &directListener{dc: dc, listen: l}, nil
}

func (dl *directListener) touch(ctx context.Context) (int64, error) {
	res, err := dl.dc.call(ctx, "tools/call", json.RawMessage(`{"name":"touch","arguments":{}}`))
	if err != nil {
		return 0, err
	}
	return touchCount(string(res))
}

func (dl *directListener) close() {
	dl.listen.Cancel("benchmark done")
	dl.listen.Forget()
	dl.dc.close()
}

// touchCount reads the counter value from touch's answer text
// ("touched demo://counter (count N)").
func touchCount(result string) (int64, error) {
	_, after, ok := strings.Cut(result, "(count ")
	var n int64
	if ok {
		_, err := fmt.Sscanf(after, "%d)", &n)
		ok = err == nil
	}
	if !ok {
		return 0, fmt.Errorf("touch: unexpected result %.200s", result)
	}
	return n, nil
}

// fanOut is section 5: one resources/updated from the demo child to 1, 10
// and 100 apps subscribed through mcpd (each its own gRPC connection and
// stream); latency from the child stamping the notification just before
// writing it to each app receiving it. Side by side, in the same rounds:
// one app with its own child listening directly over stdio.
func (b *bench) fanOut(ctx context.Context, d *daemon, bareSrv *bare, bareSock string) error {
	t := b.targets()[0] // the demo server
	b.progress("fan-out: %s", t.Name)
	iters := 100
	if b.o.smoke {
		iters = 20
	}
	maxApps := fanOutApps[len(fanOutApps)-1]
	recv := make(chan receipt, maxApps*4)
	errs := make(chan error, 1)
	direct, err := startDirectListener(ctx, b.reg, t, recv, errs)
	if err != nil {
		return err
	}
	defer direct.close()
	f := &fanOutSection{client: d.client(), server: t.Name, bareSrv: bareSrv, direct: direct,
		recv: recv, errs: errs, bareCount: bareFanOutFirst}
	for _, n := range fanOutApps {
		apps, err := openFanOutApps(ctx, d, t.Name, n, recv, errs)
		if err != nil {
			return err
		}
		bareApps, err := openBareFanOutApps(ctx, bareSock, n, recv, errs)
		if err != nil {
			closeFanOutApps(apps)
			return err
		}
		err = func() error {
			defer closeFanOutApps(apps)
			defer closeFanOutApps(bareApps)
			if _, err := d.serverPid(ctx, t.Name); err != nil {
				return err
			}
			row, err := f.measure(ctx, n, b.o.rounds, iters)
			if err != nil {
				return err
			}
			b.rep.FanOut = append(b.rep.FanOut, row)
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// The variants of the fan-out section, by index.
const (
	fanDirect = iota
	fanMcpd
	fanBare
)

// fanOutSection is what the fan-out section's variants fire notifications
// through, and where they are received.
type fanOutSection struct {
	client    mcpdv1.McpdClient
	server    string
	bareSrv   *bare
	direct    *directListener
	recv      chan receipt
	errs      chan error
	bareCount int64 // the last count the bare server fired
}

// measure fires iters notifications per variant in each of rounds rounds,
// each round starting with another, with n apps subscribed through mcpd
// and to the bare server, and returns the row of medians.
func (f *fanOutSection) measure(ctx context.Context, n, rounds, iters int) (fanOutRow, error) {
	var p50s, p99s [3][]time.Duration
	for r := range rounds {
		for _, v := range rotate(3, r) {
			var all latencies
			for range iters {
				got, err := f.fire(ctx, v, n)
				if err != nil {
					return fanOutRow{}, err
				}
				all = append(all, got...)
			}
			p50s[v], p99s[v] = append(p50s[v], all.quantile(0.5)), append(p99s[v], all.quantile(0.99))
		}
	}
	return fanOutRow{Apps: n,
		P50: us(medianDur(p50s[fanMcpd])), P99: us(medianDur(p99s[fanMcpd])),
		DirectP50: us(medianDur(p50s[fanDirect])), DirectP99: us(medianDur(p99s[fanDirect])),
		BareP50: us(medianDur(p50s[fanBare])), BareP99: us(medianDur(p99s[fanBare])),
		Notifications: iters * rounds}, nil
}

// fire fires one notification through variant v and returns the latency
// of each of its receivers: n apps, or the one direct app.
func (f *fanOutSection) fire(ctx context.Context, v, n int) (latencies, error) {
	switch v {
	case fanBare:
		f.bareCount++
		if err := fireBare(ctx, f.bareSrv.conn, f.bareCount); err != nil {
			return nil, err
		}
		got, err := awaitTouch(ctx, f.recv, f.errs, f.bareCount, n)
		if err != nil {
			return nil, fmt.Errorf("bare, %d apps: %w", n, err)
		}
		return got, nil
	case fanDirect:
		count, err := f.direct.touch(ctx)
		if err != nil {
			return nil, err
		}
		got, err := awaitTouch(ctx, f.recv, f.errs, count, 1)
		if err != nil {
			return nil, fmt.Errorf("direct: %w", err)
		}
		return got, nil
	}
	if err := touchThroughMcpd(ctx, f.client, f.server); err != nil {
		return nil, err
	}
	// The count is the child's; read it from the first receipt.
	first, err := awaitAny(ctx, f.recv, f.errs)
	if err != nil {
		return nil, fmt.Errorf("%d apps: %w", n, err)
	}
	got, err := awaitTouch(ctx, f.recv, f.errs, first.count, n-1)
	if err != nil {
		return nil, fmt.Errorf("%d apps: %w", n, err)
	}
	return append(got, first.latency), nil
}

// awaitAny waits for the next receipt.
func awaitAny(ctx context.Context, in <-chan receipt, errs <-chan error) (receipt, error) {
	timeout := time.NewTimer(eventWait)
	defer timeout.Stop()
	select {
	case r := <-in:
		return r, nil
	case err := <-errs:
		return receipt{}, err
	case <-timeout.C:
		return receipt{}, fmt.Errorf("no touch notification within %s", eventWait)
	case <-ctx.Done():
		return receipt{}, ctx.Err()
	}
}
