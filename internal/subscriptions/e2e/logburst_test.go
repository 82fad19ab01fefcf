package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// logReader is an app reading log messages: it keeps each one's seq and
// adds up the logs-lagged counts.
type logReader struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex // guards the fields below
	seqs    []int      // in the order received
	counted uint64     // log messages the markers say were dropped
	markers int
	err     error // the first malformed event, or how the stream ended early
}

// readLogs opens a stream of server's log messages and reads it once
// resume is closed.
func readLogs(t *testing.T, c mcpdv1.McpdClient, name, server string, resume <-chan struct{}) *logReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{server}, LogMessages: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ack, err := s.Recv(); err != nil || !ack.GetAck().GetServers()[0].GetLogMessages() {
		cancel()
		t.Fatalf("%s: ack %v, %v; want log messages acknowledged", name, ack, err)
	}
	r := &logReader{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		select {
		case <-resume:
		case <-ctx.Done():
			return
		}
		for {
			ev, err := s.Recv()
			if err != nil {
				if ctx.Err() == nil {
					r.fail(fmt.Errorf("stream ended: %w", err))
				}
				return
			}
			r.add(ev)
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *logReader) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *logReader) add(ev *mcpdv1.SubscriptionEvent) {
	switch ev.GetKind() {
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED:
		r.mu.Lock()
		r.counted += ev.GetDroppedLogMessages()
		r.markers++
		r.mu.Unlock()
		return
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE:
	default:
		r.fail(fmt.Errorf("unexpected %v event", ev.GetKind()))
		return
	}
	var p struct {
		Level, Logger string
		Data          struct{ Seq *int }
	}
	if err := json.Unmarshal([]byte(ev.GetParamsJson()), &p); err != nil || p.Data.Seq == nil || p.Level != "info" || p.Logger != "fakemcp" {
		r.fail(fmt.Errorf("log message %s is not one the child sent (%v)", ev.GetParamsJson(), err))
		return
	}
	r.mu.Lock()
	r.seqs = append(r.seqs, *p.Data.Seq)
	r.mu.Unlock()
}

// has reports whether the reader received the log message seq.
func (r *logReader) has(seq int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seqs) > 0 && r.seqs[len(r.seqs)-1] == seq
}

// A burst of 100k distinct log messages from a real child reaches an app
// that reads along and one that stalls until its queue overflowed: every
// message is either delivered, once and in order, or counted in a
// logs-lagged event (delivered + counted == 100000); no two are merged
// into one, and neither stream ends.
func TestLogBurstIsDeliveredOrCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const burst = 100000
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy,quiet")}, SubscriptionQueueEvents: 256})
	c, _ := d.dial()
	reading := make(chan struct{})
	close(reading)
	stalled := make(chan struct{})
	readers := []*logReader{readLogs(t, c, "reading app", "s", reading), readLogs(t, c, "stalled app", "s", stalled)}

	d.callTool("s", "logburst", fmt.Sprintf(`{"n":%d}`, burst))
	// Every message of the burst was published before the call's answer;
	// the stalled app's queue has overflowed by now.
	var overflowed uint64
	for _, st := range d.sup.Subscriptions().Streams() {
		overflowed = max(overflowed, st.Queue.LogsDropped+st.Queue.Coalesced)
	}
	if overflowed == 0 {
		t.Fatal("no queue overflowed: the burst did not fill the stalled app's queue")
	}
	close(stalled)
	// One more message after the burst: once it arrived, everything before
	// it has been delivered or counted.
	d.callTool("s", "logburst", fmt.Sprintf(`{"n":1,"start":%d}`, burst))
	for _, r := range readers {
		waitFor(t, r.name+" to read the message after the burst", func() bool {
			r.mu.Lock()
			err := r.err
			r.mu.Unlock()
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			return r.has(burst)
		})
		r.mu.Lock()
		seqs, counted, markers := r.seqs[:len(r.seqs)-1], r.counted, r.markers
		r.mu.Unlock()
		for i, seq := range seqs {
			if seq < 0 || seq >= burst || i > 0 && seq <= seqs[i-1] {
				t.Fatalf("%s: message %d has seq %d after %d: delivered twice or out of order", r.name, i, seq, seqs[max(i-1, 0)])
			}
		}
		if got := uint64(len(seqs)) + counted; got != burst {
			t.Errorf("%s: %d delivered + %d counted dropped (in %d logs-lagged events) = %d, want %d",
				r.name, len(seqs), counted, markers, got, burst)
		}
		t.Logf("%s: %d delivered, %d counted dropped in %d logs-lagged events", r.name, len(seqs), counted, markers)
	}
	for _, st := range d.sup.Subscriptions().Streams() {
		if st.Queue.Coalesced != 0 || st.Queue.Lagged {
			t.Errorf("stream %d: %+v, want no log message coalesced and the stream open", st.ID, st.Queue)
		}
	}
}
