package pin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A server keeps at most maxVariants declaration variants, in memory and
// in its file: a new one drops the least recently used unchanged one,
// never one with a pending change, and a dropped one is pinned afresh when
// it comes back.
func TestVariantsBounded(t *testing.T) {
	dir := t.TempDir()
	b := NewBook(NewStore(dir))
	b.maxVariants = 3
	v := func(i int) Variant { return Variant{Key: fmt.Sprintf("v%d", i)} }
	observe := func(i int, list string) Observation {
		t.Helper()
		obs, err := b.ObserveVariant("s", v(i), ModeEnforce, 10, json.RawMessage(list))
		if err != nil {
			t.Fatalf("list of v%d: %v", i, err)
		}
		return obs
	}
	for i := range 3 {
		observe(i, listText)
	}
	// v0 changes (pending), then v1 is used again: v2 is the least
	// recently used without a pending change.
	if obs := observe(0, listUI2); len(obs.Changes) == 0 {
		t.Fatalf("changed v0: %+v, want a change", obs)
	}
	observe(1, listText)
	observe(3, listUI)

	keys := func() map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for _, sp := range b.variantsOf("s") {
			got[sp.variant.Key] = true
		}
		return got
	}
	fileKeys := func() map[string]bool {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, "s.json"))
		if err != nil {
			t.Fatal(err)
		}
		var f file
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for k := range f.Variants {
			got[k] = true
		}
		return got
	}
	want := map[string]bool{"v0": true, "v1": true, "v3": true}
	if got := keys(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("variants in memory %v, want %v (v2 dropped)", got, want)
	}
	if got := fileKeys(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("variants in the file %v, want %v (v2 dropped)", got, want)
	}
	if cs, _ := b.Pending("s"); len(cs) != 1 || cs[0].Variant.Key != "v0" {
		t.Errorf("pending %+v, want v0's change kept", cs)
	}

	// v2 comes back with another list: pinned afresh, as a new variant.
	if obs := observe(2, listUI); !obs.FirstPin || len(obs.Changes) != 0 {
		t.Errorf("v2 back: %+v, want it pinned afresh", obs)
	}
	// Every other variant but v0 is droppable; v0 keeps its change.
	if got := keys(); len(got) != 3 || !got["v0"] || !got["v2"] {
		t.Errorf("variants in memory %v, want 3 with v0 and v2", got)
	}
	if got := fileKeys(); len(got) != 3 || !got["v0"] || !got["v2"] {
		t.Errorf("variants in the file %v, want 3 with v0 and v2", got)
	}

	// Every variant but the new one has a pending change: the bound gives.
	b2 := NewBook(NewStore(t.TempDir()))
	b2.maxVariants = 1
	for i := range 2 {
		if _, err := b2.ObserveVariant("s", v(i), ModeEnforce, 10, json.RawMessage(listText)); err != nil {
			t.Fatal(err)
		}
		if _, err := b2.ObserveVariant("s", v(i), ModeEnforce, 10, json.RawMessage(listUI2)); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := b2.Pending("s"); len(cs) != 2 {
		t.Errorf("pending %+v, want both variants' changes kept", cs)
	}
}
