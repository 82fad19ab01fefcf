package core

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestIsCompactMatchesCompact: isCompact is true exactly when json.Compact
// would leave the text as it is.
func TestIsCompactMatchesCompact(t *testing.T) {
	for _, text := range []string{
		`{}`, `{ }`, `{"a":1}`, `{"a": 1}`, "{\"a\":1}\n", ` {"a":1}`,
		`{"a b":"c d"}`, `{"a":"say \"hi there\""}`, `{"a":"\\"}`, `{"a":"\\", "b":1}`,
		`{"a":"tab\there","b":[1,2]}`, `{"a":[1, 2]}`, `{"a":"\u0020"}`,
	} {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(text)); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got, want := isCompact([]byte(text)), buf.String() == text; got != want {
			t.Errorf("isCompact(%s) = %v, want %v", text, got, want)
		}
	}
}

// TestJSONFieldNotCopied: a large compact *_json field is validated in
// place and handed on without a copy; one with insignificant whitespace is
// compacted in one buffer.
func TestJSONFieldNotCopied(t *testing.T) {
	const size = 2 << 20
	compact := `{"data":"` + strings.Repeat("x y", size/3) + `"}`
	pretty := "{\n  \"data\": \"" + strings.Repeat("x y", size/3) + "\"\n}"
	tests := []struct {
		name, text string
		max        uint64
	}{
		{"compact", compact, size / 8},
		{"pretty", pretty, size * 5 / 4},
	}
	for _, tt := range tests {
		best := ^uint64(0)
		var out json.RawMessage
		var before, after runtime.MemStats
		for range 3 {
			runtime.ReadMemStats(&before)
			var err error
			view := unsafe.Slice(unsafe.StringData(tt.text), len(tt.text)) // as the gRPC door passes it
			if out, err = JSONObject("arguments_json", view); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			best = min(best, after.TotalAlloc-before.TotalAlloc)
		}
		if string(out) != compact {
			t.Fatalf("%s: jsonObject gave %.80s…, want the compact text", tt.name, out)
		}
		if best > tt.max {
			t.Errorf("%s: jsonObject of %d MiB allocated %.2f times its size, want at most %.2f", tt.name, size>>20, float64(best)/size, float64(tt.max)/size)
		}
	}
}
