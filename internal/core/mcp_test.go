package core

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProgressQueueNeverBlocks(t *testing.T) {
	q := newProgressQueue(4)
	for i := range 100 { // nobody drains: push must still return
		q.push(json.RawMessage(fmt.Sprint(i)))
	}
	if got := q.dropped.Load(); got != 96 {
		t.Errorf("dropped = %d, want 96", got)
	}
	var got []string
	for range 4 {
		got = append(got, string((<-q.ch).Params))
	}
	// The newest survive.
	if diff := cmp.Diff([]string{"96", "97", "98", "99"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestProgressQueueCopiesParams(t *testing.T) {
	q := newProgressQueue(2)
	buf := []byte(`{"progress":1}`)
	q.push(buf)
	copy(buf, `{"progress":9}`)
	if got := string((<-q.ch).Params); got != `{"progress":1}` {
		t.Errorf("queued params changed with the caller's buffer: %s", got)
	}
}
