package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// This file keeps a legacy child's resources/subscribe in line with the
// URIs the streams want. Only the difference goes upstream, found by one
// walk of two sorted lists, and its requests are sent upstreamInFlight at
// a time rather than one round trip after another: thousands of watched
// URIs cost an update O(n), not O(n²) or n round trips.

// upstreamInFlight bounds the requests a batch has outstanding on a child
// at once.
const upstreamInFlight = 16

// ErrChildGone is wrapped by the error of a Child.Call that failed
// because the child exited or is being stopped.
var ErrChildGone = errors.New("the server's process is gone")

// errNotSent is matched (errors.Is) by the error of a request a batch did
// not send, because of why it stopped.
var errNotSent = errors.New("not sent")

// notSentError says why a batch stopped sending; it is errNotSent.
type notSentError struct{ why string }

func (e *notSentError) Error() string        { return "not sent: " + e.why }
func (e *notSentError) Is(target error) bool { return target == errNotSent }

// Why a batch stops sending.
var (
	errStalled   = &notSentError{"the server did not answer an earlier request in time"}
	errChildGone = &notSentError{"the server exited"}
	errLoopEnded = &notSentError{"subscriptions are shutting down"}
)

// batch sends the resources/(un)subscribe requests of one reconcile. Once
// one goes unanswered for Options.CallTimeout, the child exits or ctx
// ends, it sends nothing more: a child that answers nothing costs the
// reconcile one timeout, not one per URI.
type batch struct {
	u       *upstream
	ctx     context.Context
	stopped atomic.Pointer[notSentError] // why it stopped; nil while it sends
}

func (u *upstream) newBatch(ctx context.Context) *batch { return &batch{u: u, ctx: ctx} }

// call sends method for each of uris, upstreamInFlight at once, and
// returns each request's error by index.
func (b *batch) call(method string, uris []string) []error {
	errs := make([]error, len(uris))
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(uris); i = int(next.Add(1) - 1) {
			errs[i] = b.one(method, uris[i])
		}
	}
	var wg sync.WaitGroup
	for range min(len(uris), upstreamInFlight) - 1 {
		wg.Go(work) // owned: waited for below
	}
	work()
	wg.Wait()
	return errs
}

// one sends one request, unless the batch has stopped.
func (b *batch) one(method, uri string) error {
	if why := b.stopped.Load(); why != nil {
		return why
	}
	child := b.u.child
	if exited(child) {
		return b.stop(errChildGone)
	}
	cctx, cancel := context.WithTimeout(b.ctx, b.u.m.opts.CallTimeout)
	defer cancel()
	err := child.Call(cctx, method, uriParams(uri))
	switch {
	case err == nil:
	case b.ctx.Err() != nil:
		b.stop(errLoopEnded)
	case errors.Is(err, ErrChildGone) || exited(child):
		b.stop(errChildGone)
	case errors.Is(err, context.DeadlineExceeded): // not an answer, however late
		b.stop(errStalled)
	}
	return err
}

// stop records why the batch sends nothing more, unless it had stopped
// already, and returns the reason that holds.
func (b *batch) stop(why *notSentError) error {
	b.stopped.CompareAndSwap(nil, why)
	return b.stopped.Load()
}

// maxFailuresLogged bounds the failed requests of a batch logged one by
// one; the rest are counted in one line.
const maxFailuresLogged = 3

// logFailures logs what failed of method's requests for uris (errs by
// index): the first few with their URI and error, then how many more
// failed and how many were not sent, each in one line. Subscribes that
// failed are warnings (the app's acknowledgement lacks them); unsubscribes
// only debug (the child may have gone).
func (b *batch) logFailures(method string, uris []string, errs []error) {
	level := zap.DebugLevel
	if method == "resources/subscribe" {
		level = zap.WarnLevel
	}
	logged, more, notSent := 0, 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, errNotSent):
			notSent++
		case logged < maxFailuresLogged:
			logged++
			b.u.log.Log(level, method+" failed", zap.String("uri", uris[i]), zap.Error(err))
		default:
			more++
		}
	}
	if more > 0 {
		b.u.log.Log(level, method+" failed for more URIs", zap.Int("uris", more))
	}
	if notSent > 0 {
		b.u.log.Log(level, method+" not sent", zap.Int("uris", notSent), zap.Error(b.stopped.Load()))
	}
}

func (u *upstream) applyLegacy(ctx context.Context, want wants) ServerAck {
	var caps capabilities
	_ = json.Unmarshal(u.child.Capabilities(), &caps)
	a := ServerAck{Era: "legacy", State: true,
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
		Logs:                 len(caps.Logging) > 0 && string(caps.Logging) != "null",
	}
	// Only the difference goes upstream: the URIs wanted and not yet
	// subscribed, and those subscribed and wanted no more (both lists are
	// sorted: union leaves want.uris so).
	var add, drop []string
	canSubscribe := caps.Resources != nil && caps.Resources.Subscribe
	walkSorted(want.uris, u.subscribedURIs, func(uri string, wanted, held bool) {
		switch {
		case wanted && !held && canSubscribe:
			add = append(add, uri)
		case held && !wanted:
			drop = append(drop, uri)
		}
	})
	b := u.newBatch(ctx)
	errs := b.call("resources/subscribe", add)
	b.logFailures("resources/subscribe", add, errs)
	var failed map[string]bool
	for i, err := range errs {
		if err != nil {
			if failed == nil {
				failed = map[string]bool{}
			}
			failed[add[i]] = true
		}
	}
	b.unsubscribe(drop)
	var held []string
	walkSorted(want.uris, u.subscribedURIs, func(uri string, wanted, wasHeld bool) {
		if wanted && (wasHeld || canSubscribe && !failed[uri]) {
			held = append(held, uri)
		}
	})
	// Replaced, never changed: the ack shares it (clipped, so that an
	// append to either copies).
	u.subscribedURIs = slices.Clip(held)
	a.URIs = u.subscribedURIs
	return a
}

// unsubscribe sends a resources/unsubscribe for each of uris; a failure is
// only logged (the child may have gone). The caller forgets them.
func (b *batch) unsubscribe(uris []string) {
	b.logFailures("resources/unsubscribe", uris, b.call("resources/unsubscribe", uris))
}

// walkSorted calls f once for every string in the sorted lists a and b,
// in order, saying which of them hold it.
func walkSorted(a, b []string, f func(s string, inA, inB bool)) {
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			f(a[0], true, false)
			a = a[1:]
		case len(a) == 0 || b[0] < a[0]:
			f(b[0], false, true)
			b = b[1:]
		default:
			f(a[0], true, true)
			a, b = a[1:], b[1:]
		}
	}
}

func uriParams(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}
