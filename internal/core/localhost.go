package core

import (
	"context"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// ServeHost registers the app as a host, as the gRPC Host does, and serves
// the registration until ctx ends: each request a server sends its client
// that mcpd routes to this host is answered by answer, on a goroutine of
// its own whose context ends when the server cancels the request, and each
// notification about such a request (notifications/elicitation/complete)
// goes to notify (nil: dropped).
// registered is called once the registration is in place, before any
// request comes. ServeHost returns once every answer has returned.
func (a *App) ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error {
	ctx = a.Context(ctx)
	h, _, err := a.s.registerHost(ctx, reg)
	if err != nil {
		return ToError(err)
	}
	defer a.s.hosts.unregister(h)
	registered()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards calls
		calls = map[uint64]context.CancelFunc{}
	)
	defer wg.Wait()
	for {
		var m any
		select {
		case <-ctx.Done():
			return nil
		case m = <-h.out:
		}
		switch m := m.(type) {
		case hostCall:
			cctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			calls[m.id] = cancel
			mu.Unlock()
			wg.Go(func() { // owned: ServeHost waits for it
				defer func() {
					mu.Lock()
					delete(calls, m.id)
					mu.Unlock()
					cancel()
				}()
				res, rerr := answer(cctx, m.server, m.method, m.params)
				if cctx.Err() == nil {
					h.deliver(m.id, hostAnswerFrom(res, rerr))
				}
			})
		case hostNotice:
			if notify != nil {
				notify(m.server, m.method, m.params)
			}
		case hostCancel:
			mu.Lock()
			cancel := calls[m.id]
			mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
}
