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
	events := make(chan service.SubscriptionEvent, 64)
	var watchErr error
	watchDone := make(chan struct{})
	go func() { // owned: serveEvents waits for watchDone before returning
		defer close(watchDone)
		defer close(events)
		watchErr = d.be.Watch(ctx, service.Watch{State: true, Client: service.Client{Name: AppName}}, func(ev service.SubscriptionEvent) error {
			select {
			case events <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	defer func() {
		cancel()
		<-watchDone
	}()
	if _, ok := <-events; !ok { // the acknowledgement, or the watch's end
		if <-watchDone; watchErr != nil {
			writeError(w, watchErr)
		}
		return
	}

	sse, ok := startSSE(w)
	if !ok {
		return
	}
	snap := func() bool {
		s, err := d.build(ctx)
		if err != nil {
			d.log.Debug("dashboard snapshot failed", zap.Error(err))
			return sse.send("problem", map[string]string{"error": err.Error()}) == nil
		}
		return sse.send("snapshot", s) == nil
	}
	if !snap() {
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
			out := stateEvent{Server: ev.Server, State: ev.State, Pid: int64(ev.Pid), Exit: ev.Exit,
				Error: d.mask(ev.Server, ev.Error), TimeUnixMs: ev.Time.UnixMilli()}
			if sse.send("state", out) != nil {
				return
			}
			if pending == nil {
				pending = time.After(debounce)
			}
		case <-pending:
			pending = nil
			if !snap() {
				return
			}
		case <-tick.C:
			if !snap() {
				return
			}
		}
	}
}
