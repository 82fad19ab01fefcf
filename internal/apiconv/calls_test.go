package apiconv

import (
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Every source of a response goes to mcpd.v1 and back as itself, and each
// has a status of its own.
func TestSourceRoundTrip(t *testing.T) {
	seen := map[mcpdv1.CacheStatus]bool{}
	for _, src := range []service.Source{service.Fetched, service.Hit, service.Coalesced} {
		c := SourceToProto(src)
		if seen[c] || c == mcpdv1.CacheStatus_CACHE_STATUS_UNSPECIFIED {
			t.Errorf("source %d as %v: not a status of its own", src, c)
		}
		seen[c] = true
		if back := SourceOf(c); back != src {
			t.Errorf("source %d went to %v and came back %d", src, c, back)
		}
	}
}
