package cache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// coveredBy, which looks up only uri's prefixes in the sorted subs, agrees
// with trying covers on every sub, for URIs made of the characters covers
// cares about.
func TestCoveredByAgreesWithCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const alphabet = "ab/?#"
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 2000 {
		subs := make([]string, r.IntN(30))
		for i := range subs {
			subs[i] = word()
		}
		slices.Sort(subs)
		subs = slices.Compact(subs)
		for range 20 {
			uri := word()
			want := slices.ContainsFunc(subs, func(sub string) bool { return covers(sub, uri) })
			if got := coveredBy(subs, uri); got != want {
				t.Fatalf("coveredBy(%q, %q) = %v, covers says %v", subs, uri, got, want)
			}
		}
	}
}

func TestWithdrawnURIs(t *testing.T) {
	got := withdrawnURIs([]string{"a", "b", "c", "e"}, []string{"b", "d", "e", "f"})
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("withdrawn = %q, want [a c]", got)
	}
	if got := withdrawnURIs([]string{"a"}, nil); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("withdrawn from nothing = %q", got)
	}
}
