package core

import (
	"encoding/json"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/service"
	"go.uber.org/zap"
)

// progressRelay carries one call's progress notifications from the
// session's reader goroutine to the app (its CallTool stream, or an
// in-process caller's function). Nothing but the
// relay itself is allocated until the first notification: the queue and the
// sender goroutine are made by it, so a call without progress (almost all
// of them) costs no channel and no goroutine.
type progressRelay struct {
	log    *zap.Logger
	emit   func(service.Event) error // passes one notification on to the app
	server string

	// sendOK is used by the sender goroutine while it runs, then by the
	// handler in finish after it ended.
	sendOK bool

	mu       sync.Mutex // guards q, started, finished
	q        *progressQueue
	started  bool
	finished bool
	stop     chan struct{} // closed by finish; made with the sender
	done     chan struct{} // closed by the sender when it returns
}

// push is the session's OnProgress callback; it never blocks. After finish
// it drops the notification: the call has returned, its response is next.
func (r *progressRelay) push(p json.RawMessage) { r.pushItem(p, false) }

// pushMessage is the session's OnMessage callback: a notifications/message
// of this call travels like its progress, in order with it.
func (r *progressRelay) pushMessage(p json.RawMessage) { r.pushItem(p, true) }

func (r *progressRelay) pushItem(p json.RawMessage, message bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	if r.q == nil {
		r.q = newProgressQueue(progressBuffer)
	}
	r.q.pushItem(p, message)
	if r.started {
		return
	}
	r.started = true
	r.sendOK = true
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	q := r.q
	go func() { // owned: finish waits for done
		defer close(r.done)
		for {
			select {
			case p := <-q.ch:
				r.send(p)
			case <-r.stop:
				return
			}
		}
	}()
}

// finish is called by the handler once the call returned: it stops the
// sender, then sends what is still queued (progress the child sent before
// its response), so that the response goes out after every progress
// notification.
func (r *progressRelay) finish() {
	r.mu.Lock()
	r.finished = true
	q, started := r.q, r.started
	r.mu.Unlock()
	if q == nil {
		return
	}
	if started {
		close(r.stop)
		<-r.done
	}
	for {
		select {
		case p := <-q.ch:
			r.send(p)
		default:
			if n := q.dropped.Load(); n > 0 {
				r.log.Debug("progress notifications dropped", zap.String("server", r.server), zap.Int64("dropped", n))
			}
			return
		}
	}
}

// send sends one progress or log notification to the app; after a failed send
// (the app went away: its context ends and so does the call) the rest are
// dropped.
func (r *progressRelay) send(p service.Event) {
	if !r.sendOK {
		return
	}
	if err := r.emit(p); err != nil {
		r.sendOK = false
		r.log.Debug("progress send failed", zap.String("server", r.server), zap.Error(err))
	}
}
