package config

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"demo", "everything", "git_hub", "files"}
	for _, tt := range []struct {
		want     string
		maxEdits int
		best     string
	}{
		{"dmeo", 1, "demo"},            // two neighbours swapped: one edit
		{"demi", 1, "demo"},            // one letter changed
		{"GitHub", 1, "git_hub"},       // case and "_" ignored
		{"everyting", 1, "everything"}, // one letter missing
		{"fiels", 1, "files"},
		{"touch", 1, ""}, // nothing like it
		{"edmo", 1, "demo"},
		{"emdo", 1, ""},
		{"emdo", 2, "demo"}, // two swaps
	} {
		if got := Closest(tt.want, names, tt.maxEdits); got != tt.best {
			t.Errorf("Closest(%q, %d) = %q, want %q", tt.want, tt.maxEdits, got, tt.best)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"ab", "ba", 1}, {"abcd", "badc", 2}, {"kitten", "sitting", 3}, {"ca", "abc", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}
