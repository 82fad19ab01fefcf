package transport

import (
	"sync"
	"time"
	"unicode/utf8"
)

// Ring defaults and the follower buffer.
const (
	DefaultRingLines = 1000
	DefaultRingBytes = 1 << 20
	// FollowBuffer is the channel capacity of one follower (Subscribe,
	// Follow). A follower that falls this far behind loses lines.
	FollowBuffer = 256
)

// Line is one stderr line of a child.
type Line struct {
	Time time.Time
	// Text is the line without its line ending, valid UTF-8 (invalid
	// sequences replaced by U+FFFD).
	Text string
	// Truncated reports whether the line was cut at MaxStderrLine (or at the
	// ring's byte bound) and the rest discarded.
	Truncated bool
	Pid       int
}

// Ring keeps the most recent stderr lines of one server across restarts,
// bounded by line count and bytes. It is safe for concurrent use.
//
// Followers (Subscribe, Follow) receive every line added after they
// subscribed on a buffered channel; Add never blocks on a follower: when a
// follower's buffer is full the line is dropped for that follower only and
// counted; the cancel function returns that count.
type Ring struct {
	mu       sync.Mutex // guards following fields
	maxLines int
	maxBytes int
	buf      []Line // circular; grows up to maxLines
	head     int    // index of the oldest line
	n        int    // number of lines held
	bytes    int    // sum of len(Text) of the lines held
	subs     map[*follower]struct{}
}

type follower struct {
	ch      chan Line
	dropped int64
}

// NewRing returns a ring holding at most maxLines lines and maxBytes bytes of
// text. Zero values mean 1000 lines and 1 MiB.
func NewRing(maxLines, maxBytes int) *Ring {
	if maxLines <= 0 {
		maxLines = DefaultRingLines
	}
	if maxBytes <= 0 {
		maxBytes = DefaultRingBytes
	}
	return &Ring{maxLines: maxLines, maxBytes: maxBytes, subs: make(map[*follower]struct{})}
}

// Add appends a line, evicting the oldest ones beyond the bounds. A line
// longer than the byte bound by itself is cut to it and marked Truncated.
// Followers get the line without Add ever blocking.
func (r *Ring) Add(l Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(l.Text) > r.maxBytes {
		// Cut at a rune boundary so Text stays valid UTF-8.
		cut := r.maxBytes
		for cut > 0 && !utf8.RuneStart(l.Text[cut]) {
			cut--
		}
		l.Text = l.Text[:cut]
		l.Truncated = true
	}
	for r.n > 0 && (r.n >= r.maxLines || r.bytes+len(l.Text) > r.maxBytes) {
		r.bytes -= len(r.buf[r.head].Text)
		r.buf[r.head] = Line{}
		r.head = (r.head + 1) % len(r.buf)
		r.n--
	}
	if r.n == len(r.buf) {
		r.growLocked()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = l
	r.n++
	r.bytes += len(l.Text)
	for f := range r.subs {
		select {
		case f.ch <- l:
		default:
			f.dropped++
		}
	}
}

// growLocked enlarges buf (to at most maxLines), unrolling it so head is 0.
func (r *Ring) growLocked() {
	size := min(max(2*len(r.buf), 16), r.maxLines)
	nb := make([]Line, size)
	r.copyLastLocked(nb, r.n)
	r.buf, r.head = nb, 0
}

// copyLastLocked copies the n most recent lines, oldest first, into dst.
func (r *Ring) copyLastLocked(dst []Line, n int) {
	start := r.n - n
	for i := range n {
		dst[i] = r.buf[(r.head+start+i)%len(r.buf)]
	}
}

// Last returns up to n most recent lines, oldest first. The slice is a copy.
func (r *Ring) Last(n int) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastLocked(n)
}

func (r *Ring) lastLocked(n int) []Line {
	n = min(max(n, 0), r.n)
	out := make([]Line, n)
	r.copyLastLocked(out, n)
	return out
}

// Subscribe starts following the ring: every line added from now on is sent
// on ch, which has FollowBuffer capacity. A follower that does not keep up
// loses lines; it never slows Add. cancel stops following and closes ch; it
// is idempotent and returns how many lines were dropped for this follower.
func (r *Ring) Subscribe() (ch <-chan Line, cancel func() (dropped int64)) {
	_, ch, cancel = r.Follow(0)
	return ch, cancel
}

// Follow is Subscribe plus the last n lines already held, taken atomically
// with the subscription so that no line is missed or repeated between the
// backlog and the channel (what `mcpdctl logs -f` needs).
func (r *Ring) Follow(n int) (backlog []Line, ch <-chan Line, cancel func() (dropped int64)) {
	f := &follower{ch: make(chan Line, FollowBuffer)}
	r.mu.Lock()
	backlog = r.lastLocked(n)
	r.subs[f] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	cancel = func() int64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		once.Do(func() {
			delete(r.subs, f)
			close(f.ch)
		})
		return f.dropped
	}
	return backlog, f.ch, cancel
}
