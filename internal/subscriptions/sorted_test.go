package subscriptions

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// mergeSorted is the sorted union of the lists, however many there are.
func TestMergeSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		lists := make([][]string, r.IntN(7))
		all := map[string]bool{}
		for i := range lists {
			set := map[string]bool{}
			for range r.IntN(10) {
				set[fmt.Sprint(r.IntN(20))] = true
			}
			lists[i] = slices.Sorted(maps.Keys(set))
			maps.Copy(all, set)
		}
		before := slices.Clone(lists)
		for i := range before {
			before[i] = slices.Clone(lists[i])
		}
		got := mergeSorted(lists)
		if want := slices.Sorted(maps.Keys(all)); !slices.Equal(got, want) {
			t.Fatalf("mergeSorted(%q) = %q, want %q", lists, got, want)
		}
		for i := range lists {
			if !slices.Equal(lists[i], before[i]) {
				t.Fatalf("mergeSorted changed list %d: %q, was %q", i, lists[i], before[i])
			}
		}
	}
}

// walkSorted visits every string of either list once, in order, saying
// which lists hold it.
func TestWalkSorted(t *testing.T) {
	var got []string
	walkSorted([]string{"a", "c", "d"}, []string{"b", "c", "e"}, func(s string, inA, inB bool) {
		got = append(got, fmt.Sprintf("%s:%v%v", s, inA, inB))
	})
	want := []string{"a:truefalse", "b:falsetrue", "c:truetrue", "d:truefalse", "e:falsetrue"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk = %q, want %q", got, want)
	}
}

// parentWatched, which looks up only the updated URI's prefixes, agrees
// with trying uriMatches on every watched URI other than the URI itself.
func TestParentWatchedAgreesWithURIMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	word := func(least int) string {
		b := make([]byte, least+r.IntN(6))
		for i := range b {
			b[i] = "ab/"[r.IntN(3)]
		}
		return string(b)
	}
	for range 2000 {
		set := map[string]bool{}
		for range 9 + r.IntN(20) {
			set[word(1)] = true
		}
		for range 20 {
			updated := word(0)
			want := false
			for u := range set {
				want = want || u != updated && uriMatches(u, updated)
			}
			if got := parentWatched(set, updated); got != want {
				t.Fatalf("parentWatched(%v, %q) = %v, uriMatches says %v", set, updated, got, want)
			}
		}
	}
}

// uriMatches is the rule parentWatched implements, one watched URI at a
// time: "uri may be a sub-resource of the subscribed URI".
func uriMatches(subscribed, updated string) bool {
	if subscribed == updated {
		return true
	}
	if len(updated) <= len(subscribed) || updated[:len(subscribed)] != subscribed {
		return false
	}
	return subscribed[len(subscribed)-1] == '/' || updated[len(subscribed)] == '/'
}
