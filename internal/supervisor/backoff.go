package supervisor

import "time"

// backoff computes restart delays. The first unexpected exit in the
// crash-loop window restarts at once: a server that had been healthy comes
// back (and its subscriptions with it) after only its cold start. Each
// further recent exit waits min doubling up to max, with ±20% jitter (never
// above max).
type backoff struct {
	min, max time.Duration
	// rand returns a number in [0, 1).
	rand func() float64
}

// delay returns the wait before the restart that follows the n-th recent
// unexpected exit (n >= 1).
func (b backoff) delay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := b.min
	for i := 2; i < n && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	if b.rand != nil {
		d = time.Duration(float64(d) * (0.8 + 0.4*b.rand()))
	}
	return max(min(d, b.max), 0)
}
