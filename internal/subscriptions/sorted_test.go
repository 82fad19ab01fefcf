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
