package bridge

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// addEach is syncOnce's update after mcpd refused its URIs as not found:
// either the stream is gone, or the profile hides one of them. It sends
// remove alone, then each of add alone, and returns those mcpd took; the
// refused ones are remembered (subState.refused) and told once. NOT_FOUND
// also answers an update of a stream that ended meanwhile, so refusals
// count only when the stream still answers after them (stream ids are
// never reused). Each update waits for the watched servers' answers.
func (b *bridge) addEach(ctx context.Context, id uint64, add, remove []string) ([]string, error) {
	probe := func() error {
		return b.updateSubscription(ctx, service.SubscriptionUpdate{ID: id, Remove: remove})
	}
	if err := probe(); err != nil {
		return nil, err // the stream is gone
	}
	var took []string
	refused := map[string]string{} // URI → mcpd's refusal
	for _, u := range add {
		err := b.updateSubscription(ctx, service.SubscriptionUpdate{ID: id, Add: []string{u}})
		switch {
		case err == nil:
			took = append(took, u)
		case service.CodeOf(err) == service.NotFound:
			refused[u] = err.Error()
		default:
			return took, err
		}
	}
	if len(refused) == 0 {
		return took, nil
	}
	if err := probe(); err != nil {
		return took, err // gone meanwhile: the refusals may be its end's
	}
	b.mu.Lock()
	if b.subs.refused == nil {
		b.subs.refused = map[string]bool{}
	}
	for u := range refused {
		b.subs.refused[u] = true
	}
	b.mu.Unlock()
	for _, u := range slices.Sorted(maps.Keys(refused)) {
		b.warnOnce(fmt.Sprintf("resource %q is not watched: %s", u, refused[u]))
	}
	return took, nil
}

// forgetRefused drops the URIs mcpd refused, and has them sent again, when
// the profile may have changed.
func (b *bridge) forgetRefused() {
	b.mu.Lock()
	had := len(b.subs.refused) > 0
	clear(b.subs.refused)
	b.mu.Unlock()
	if had {
		b.askSyncURIs()
	}
}
