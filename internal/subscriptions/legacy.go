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
	// A refused URI is tried again only once something changed: the URIs
	// wanted from the server, or a resources list change it announced.
	if u.relisted.Swap(false) || !slices.Equal(want.uris, u.refusedFor) {
		u.refused = nil
	}
	u.refusedFor = want.uris
	canSubscribe := caps.Resources != nil && caps.Resources.Subscribe
	if u.probe != nil {
		// The child stalled and has not answered since: nothing more is
		// sent until it does (answered reconciles again).
		a.URIs = u.heldWanted(want.uris)
		return a
	}
	// Only the difference goes upstream: the URIs wanted and not yet
	// subscribed, and those subscribed and wanted no more (both lists are
	// sorted: union leaves want.uris so).
	var add, drop []string
	walkSorted(want.uris, u.subscribedURIs, func(uri string, wanted, held bool) {
		switch {
		case wanted && !held && canSubscribe && !u.refused[uri]:
			add = append(add, uri)
		case held && !wanted:
			drop = append(drop, uri)
		}
	})
	b := u.newBatch(ctx)
	errs := b.call("resources/subscribe", add)
	b.logFailures("resources/subscribe", add, errs)
	var failed map[string]bool
	var unsentAdd string
	for i, err := range errs {
		if err == nil {
			continue
		}
		if failed == nil {
			failed = map[string]bool{}
		}
		failed[add[i]] = true
		switch {
		case refusal(err):
			if u.refused == nil {
				u.refused = map[string]bool{}
			}
			u.refused[add[i]] = true
		case unsentAdd == "" && b.stalled():
			unsentAdd = add[i]
		}
	}
	kept := b.unsubscribe(drop)
	var held []string
	walkSorted(want.uris, u.subscribedURIs, func(uri string, wanted, wasHeld bool) {
		if wanted && (wasHeld || canSubscribe && !u.refused[uri] && !failed[uri]) {
			held = append(held, uri)
		}
	})
	// Replaced, never changed: the ack shares it (clipped, so that an
	// append to either copies).
	a.URIs = slices.Clip(held)
	u.subscribedURIs = a.URIs
	if len(kept) > 0 {
		// Still subscribed on the child, as far as mcpd knows.
		u.subscribedURIs = slices.Clip(merge2(held, kept))
	}
	switch {
	case len(kept) > 0:
		u.startProbe(ctx, "resources/unsubscribe", kept[0])
	case unsentAdd != "":
		u.startProbe(ctx, "resources/subscribe", unsentAdd)
	}
	u.refusing.Store(len(u.refused) > 0)
	return a
}

// resourcesListChanged is told that the child announced a resources list
// change: URIs it refused may exist now, and are tried again.
func (u *upstream) resourcesListChanged() {
	if u.refusing.Load() {
		u.relisted.Store(true)
		u.wake()
	}
}

// heldWanted is the URIs of wanted (sorted) subscribed on the child.
func (u *upstream) heldWanted(wanted []string) []string {
	var out []string
	walkSorted(wanted, u.subscribedURIs, func(uri string, w, held bool) {
		if w && held {
			out = append(out, uri)
		}
	})
	return slices.Clip(out)
}

// refusal reports whether err is the child's answer to a request (a
// JSON-RPC error), not a request left unanswered or unsent.
func refusal(err error) bool {
	return err != nil && !errors.Is(err, errNotSent) && !errors.Is(err, ErrChildGone) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// unsubscribe sends a resources/unsubscribe for each of uris; a failure is
// only logged (the child may have gone). It returns those the child may
// still hold because it stalled (not answered in time, or not sent after
// that): the caller keeps them, the rest it forgets.
func (b *batch) unsubscribe(uris []string) (kept []string) {
	errs := b.call("resources/unsubscribe", uris)
	b.logFailures("resources/unsubscribe", uris, errs)
	if !b.stalled() {
		return nil
	}
	for i, err := range errs {
		if errors.Is(err, errNotSent) || errors.Is(err, context.DeadlineExceeded) {
			kept = append(kept, uris[i])
		}
	}
	return kept
}

// stalled reports whether the batch stopped because the child did not
// answer in time.
func (b *batch) stalled() bool { return b.stopped.Load() == errStalled }

// A stalled legacy child is live but slow: what a batch could not send it
// waits until it answers again. One request (the probe) waits for that off
// the loop, with no deadline but the child's life; its answer wakes the loop
// (answered), whose next reconcile sends the rest. A restart makes it moot
// (the new child holds nothing).

// probe is one request out to a stalled child.
type probe struct {
	child       Child
	method, uri string
	cancel      context.CancelFunc
	done        chan struct{} // closed when its goroutine has returned
}

// probeResult is a probe's answer.
type probeResult struct {
	p   *probe
	err error
}

// startProbe sends method for uri to the current child off the loop,
// unless a probe is out already (loop only).
func (u *upstream) startProbe(ctx context.Context, method, uri string) {
	if u.probe != nil {
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &probe{child: u.child, method: method, uri: uri, cancel: cancel, done: make(chan struct{})}
	u.probe = p
	u.log.Debug("waiting for the server to answer again", zap.String("method", method), zap.String("uri", uri))
	go func() { // owned: endProbe or answered waits for it
		defer close(p.done)
		err := p.child.Call(pctx, method, uriParams(uri))
		u.probed <- probeResult{p, err} // capacity 1, one probe at a time
	}()
}

// answered takes a probe's answer (loop only): the child answers again, so
// the next reconcile sends what is left.
func (u *upstream) answered(r probeResult) {
	<-r.p.done
	r.p.cancel()
	if u.probe != r.p {
		return
	}
	u.probe = nil
	if u.child != r.p.child || errors.Is(r.err, ErrChildGone) || exited(r.p.child) {
		return // lost (or about to be) forgets the child's subscriptions
	}
	switch {
	case r.p.method == "resources/unsubscribe" && (r.err == nil || refusal(r.err)):
		u.subscribedURIs = slices.DeleteFunc(slices.Clone(u.subscribedURIs), func(s string) bool { return s == r.p.uri })
	case r.p.method == "resources/subscribe" && r.err == nil:
		if i, found := slices.BinarySearch(u.subscribedURIs, r.p.uri); !found {
			u.subscribedURIs = slices.Insert(slices.Clone(u.subscribedURIs), i, r.p.uri)
		}
	}
	u.log.Debug("the server answers again", zap.String("method", r.p.method), zap.Error(r.err))
}

// endProbe cancels the probe out, if any, and waits for it (loop only).
func (u *upstream) endProbe() {
	if p := u.probe; p != nil {
		p.cancel()
		<-p.done
		select {
		case <-u.probed:
		default:
		}
		u.probe = nil
	}
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
