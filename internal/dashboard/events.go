package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// debounce gathers the state events of a burst (a restart is several)
// into one snapshot.
const debounce = 100 * time.Millisecond

// sseWriter writes server-sent events.
type sseWriter struct {
	w http.ResponseWriter
	f *http.ResponseController
}

// startSSE answers the headers of an event stream.
func startSSE(w http.ResponseWriter) (*sseWriter, bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, f: http.NewResponseController(w)}
	return s, s.f.Flush() == nil
}

// send writes one event of kind with v as its JSON data.
func (s *sseWriter) send(kind string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", kind, data); err != nil {
		return err
	}
	return s.f.Flush()
}

// stateEvent is one lifecycle transition as the page shows it.
type stateEvent struct {
	Server     string `json:"server"`
	State      string `json:"state"`
	Pid        int64  `json:"pid,omitempty"`
	Exit       string `json:"exit,omitempty"`
	Error      string `json:"error,omitempty"`
	TimeUnixMs int64  `json:"timeUnixMs"`
}

// serveEvents streams the page's live updates: a "snapshot" at once, then
// each server state event ("state", from the service's Subscribe with
// server_state only, which starts nothing and keeps nothing running)
// followed by a fresh snapshot, and a snapshot every refresh interval for
// the counters and memory. One stream per page; a page whose stream lags
// behind is ended, and its EventSource reconnects to a fresh snapshot.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	ctx, err := d.callerContext(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	sw := d.watchState(ctx)
	defer func() {
		cancel()
		<-sw.done
	}()
	if _, ok := <-sw.events; !ok { // the acknowledgement, or the watch's end
		if <-sw.done; sw.err != nil {
			writeError(w, sw.err)
		}
		return
	}

	sse, ok := startSSE(w)
	if !ok {
		return
	}
	d.streamEvents(ctx, sse, sw.events)
}

// stateWatch is a running watch of the servers' state events.
type stateWatch struct {
	// events are the watch's events, the acknowledgement first; closed
	// when the watch ends.
	events chan service.SubscriptionEvent
	// done is closed when the watch's goroutine has returned; err is set
	// then.
	done chan struct{}
	err  error
}

// watchState starts watching the servers' state events until ctx is
// done. The caller waits for done before it returns.
func (d *Dashboard) watchState(ctx context.Context) *stateWatch {
	sw := &stateWatch{events: make(chan service.SubscriptionEvent, 64), done: make(chan struct{})}
	go func() { // owned: serveEvents waits for sw.done before returning
		defer close(sw.done)
		defer close(sw.events)
		sw.err = d.be.Watch(ctx, service.Watch{State: true, Client: service.Client{Name: AppName}}, func(ev service.SubscriptionEvent) error {
			select {
			case sw.events <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return sw
}

// streamEvents sends a snapshot, then each state event with a snapshot
// after a burst of them, and a snapshot every refresh interval, until ctx
// is done, the watch ends or lags, or a send fails.
func (d *Dashboard) streamEvents(ctx context.Context, sse *sseWriter, events <-chan service.SubscriptionEvent) {
	if !d.sendSnapshot(ctx, sse) {
		return
	}
	tick := time.NewTicker(d.refresh)
	defer tick.Stop()
	var pending <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return // lagged or ended: the page reconnects
			}
			switch ev.Kind {
			case service.ServerState:
			case service.Lagged, service.Failed:
				return // the page reconnects to a fresh snapshot
			default:
				continue
			}
			if sse.send("state", d.stateEventOf(ev)) != nil {
				return
			}
			if pending == nil {
				pending = time.After(debounce)
			}
		case <-pending:
			pending = nil
			if !d.sendSnapshot(ctx, sse) {
				return
			}
		case <-tick.C:
			if !d.sendSnapshot(ctx, sse) {
				return
			}
		}
	}
}

// sendSnapshot sends a fresh snapshot, or the problem building it, and
// reports whether the send succeeded.
func (d *Dashboard) sendSnapshot(ctx context.Context, sse *sseWriter) bool {
	s, err := d.build(ctx)
	if err != nil {
		d.log.Debug("dashboard snapshot failed", zap.Error(err))
		return sse.send("problem", map[string]string{"error": err.Error()}) == nil
	}
	return sse.send("snapshot", s) == nil
}

// stateEventOf is the state event ev as the page shows it, its error
// masked.
func (d *Dashboard) stateEventOf(ev service.SubscriptionEvent) stateEvent {
	return stateEvent{Server: ev.Server, State: ev.State, Pid: int64(ev.Pid), Exit: ev.Exit,
		Error: d.mask(ev.Server, ev.Error), TimeUnixMs: ev.Time.UnixMilli()}
}
