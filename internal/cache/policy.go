package cache

import (
	"fmt"
	"slices"
	"time"
)

// Mode is the per-server cache setting of the config.
type Mode uint8

// Cache modes.
const (
	// ModeDefault caches a result only while the server's own promise holds
	// (ttlMs > 0, change notifications); with no promise nothing is stored.
	ModeDefault Mode = iota
	// ModeTTL also keeps a result for Policy.TTL after it arrived when the
	// server promised nothing longer.
	ModeTTL
	// ModeNever turns the cache and request coalescing off.
	ModeNever
	// ModeAlways keeps results until a matching notification, a restart, a
	// reload or an explicit clear, whatever the server's hints.
	ModeAlways
)

// Policy is the per-server cache setting of the config ("cache": a duration,
// "never" or "always"; unset is ModeDefault).
type Policy struct {
	Mode Mode
	// TTL is the lifetime of ModeTTL; unused by the other modes.
	TTL time.Duration
}

// ParsePolicy parses the config's spelling of a policy: "" (default),
// "never", "always", or a positive Go duration ("30s", "5m").
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "":
		return Policy{}, nil
	case "never":
		return Policy{Mode: ModeNever}, nil
	case "always":
		return Policy{Mode: ModeAlways}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Policy{}, fmt.Errorf("invalid cache policy %q: want a duration, \"never\" or \"always\"", s)
	}
	if d <= 0 {
		return Policy{}, fmt.Errorf("invalid cache policy %q: the duration must be positive", s)
	}
	return Policy{Mode: ModeTTL, TTL: d}, nil
}

// String returns the config spelling of p ("" for the default).
func (p Policy) String() string {
	switch p.Mode {
	case ModeNever:
		return "never"
	case ModeAlways:
		return "always"
	case ModeTTL:
		return p.TTL.String()
	}
	return ""
}

// Promises are the change notifications a server's current process promised
// to deliver. A result of a promised kind stays valid until its notification.
type Promises struct {
	// Tools, Prompts and Resources: notifications/<kind>/list_changed will
	// arrive (legacy listChanged, or an acknowledged modern listen filter).
	Tools, Prompts, Resources bool
	// URIs have an active, acknowledged subscription:
	// notifications/resources/updated will arrive for them and the resources
	// below them. The cache keeps them sorted (SetPromises).
	URIs []string
}

// PromiseSource names who made a promise; the cache keeps one set per
// source and honours their union.
type PromiseSource uint8

// Promise sources.
const (
	// FromCapabilities: the legacy initialize result's listChanged flags.
	// They hold for the whole life of the process (until Reset), so they
	// also cover requests that started before they were set.
	FromCapabilities PromiseSource = iota
	// FromSubscriptions: mcpd's upstream subscriptions (a modern listen's
	// acknowledged filter, legacy resources/subscribe that succeeded). They
	// only cover requests that started after they were set.
	FromSubscriptions
	numSources
)

func (p *Promises) kind(k Kind) bool {
	switch k {
	case KindTools:
		return p.Tools
	case KindPrompts:
		return p.Prompts
	case KindResources:
		return p.Resources
	}
	return false
}

// coversKey reports whether p promises a notification that would
// invalidate the result of k.
func (p *Promises) coversKey(k Key) bool {
	if k.Kind != KindRead {
		return p.kind(k.Kind)
	}
	return coveredBy(p.URIs, k.URI)
}

// coveredBy reports whether one of subs (sorted) covers uri (covers).
// Only prefixes of uri can, and only those ending where covers allows, so
// each of those is looked up instead of every sub being tried: a read
// checks its promise in O(log n) with thousands of subscribed URIs.
func coveredBy(subs []string, uri string) bool {
	if len(subs) <= 8 {
		for _, sub := range subs {
			if covers(sub, uri) {
				return true
			}
		}
		return false
	}
	for i := 0; i <= len(uri); i++ {
		if i < len(uri) && uri[i] != '/' && uri[i] != '?' && uri[i] != '#' && (i == 0 || uri[i-1] != '/') {
			continue
		}
		if _, found := slices.BinarySearch(subs, uri[:i]); found {
			return true
		}
	}
	return false
}

// withdrawnURIs returns the URIs of old (sorted) that now (sorted) lacks.
func withdrawnURIs(old, now []string) []string {
	var out []string
	for _, u := range old {
		for len(now) > 0 && now[0] < u {
			now = now[1:]
		}
		if len(now) == 0 || now[0] != u {
			out = append(out, u)
		}
	}
	return out
}
