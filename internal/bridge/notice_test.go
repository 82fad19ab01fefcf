package bridge

import (
	"fmt"
	"slices"
	"testing"
)

// A profile notice is told when it is new or differs from the last of its
// kind, and again after that kind held no more: a profile removed,
// restored and removed again is told twice.
func TestProfileNoticeToldAgainAfterItCleared(t *testing.T) {
	var told []string
	b := &bridge{opts: Options{Warnf: func(format string, args ...any) { told = append(told, fmt.Sprintf(format, args...)) }}}
	b.profileNotice(noticeGone, "gone")
	b.profileNotice(noticeGone, "gone") // the same reload's second event
	b.profileNotice(noticeGained, "gained x")
	b.profileNotice(noticeGone, "") // restored
	b.profileNotice(noticeGained, "gained x, y")
	b.profileNotice(noticeGone, "gone") // removed again
	want := []string{"bridge: gone", "bridge: gained x", "bridge: gained x, y", "bridge: gone"}
	if !slices.Equal(told, want) {
		t.Fatalf("told %q, want %q", told, want)
	}
}
