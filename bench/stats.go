package main

import (
	"slices"
	"time"
)

// latencies is one batch of sequential call durations.
type latencies []time.Duration

// quantile returns the q-quantile (0..1) by the nearest-rank method; zero
// for an empty batch.
func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

// medianDur is the median of ds (the lower middle for an even count is
// averaged with the upper one).
func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianF is the median of xs.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// us converts d to microseconds as a float, for tables and JSON.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// ms converts d to milliseconds as a float.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// ratio returns a/b, or 0 when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// rotate returns the order of n variants for round r: each round starts
// with a different variant, so no variant always runs first (cold) or
// last.
func rotate(n, r int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i + r) % n
	}
	return out
}
