package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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
	stream, err := d.be.Subscribe(ctx, &mcpdv1.SubscribeRequest{ServerState: true, Client: &mcpdv1.ClientInfo{Name: AppName}})
	if err != nil {
		writeError(w, err)
		return
	}
	events := make(chan *mcpdv1.SubscriptionEvent, 64)
	recvDone := make(chan struct{})
	go func() { // owned: serveEvents waits for recvDone before returning
		defer close(recvDone)
		defer close(events)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	// The stream's handler ends with the request's context; the receiver
	// then sees the end of the stream.
	defer func() { <-recvDone }()

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
			switch ev.GetKind() {
			case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE:
			case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED, mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR:
				return // the page reconnects to a fresh snapshot
			default:
				continue
			}
			out := stateEvent{Server: ev.GetServer(), State: ev.GetState(), Pid: ev.GetPid(), Exit: ev.GetExit(),
				Error: d.mask(ev.GetServer(), ev.GetError()), TimeUnixMs: ev.GetTimeUnixMs()}
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
