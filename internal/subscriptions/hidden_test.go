package subscriptions

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// An update of a resource below a watched one reaches the stream unless
// its AllowURI hides that resource: a profile's hidden resource is not
// named to an app through its parent's subscription.
func TestUpdateBelowWatchedURIHonoursAllowURI(t *testing.T) {
	m := instantManager(t)
	w := Watch{Servers: []string{"s"}, URIs: []string{"r://a"},
		AllowURI: func(_, uri string) bool { return !strings.Contains(uri, "secret") }}
	st, acks, err := m.Subscribe(context.Background(), AppInfo{}, w)
	if err != nil || acks[0].Error != "" {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	for _, uri := range []string{"r://a/secret", "r://a/public"} {
		m.OnNotification("s", "notifications/resources/updated", []byte(fmt.Sprintf(`{"uri":%q}`, uri)))
	}
	evs, _ := st.Take(nil)
	var got []string
	for _, ev := range evs {
		if ev.Kind == KindResourceUpdated {
			got = append(got, ev.URI)
		}
	}
	if len(got) != 1 || got[0] != "r://a/public" {
		t.Fatalf("updates delivered: %q, want r://a/public only", got)
	}
}
