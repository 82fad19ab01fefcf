package main

import (
	"time"
)

// parallelRate runs c workers calling f (with their index) until dur has
// passed and returns completed calls per second.
func parallelRate(dur time.Duration, c int, f func(i int) error) (float64, error) {
	rate, _, err := parallelRun(dur, c, f)
	return rate, err
}

// parallelRun is parallelRate that also returns the median latency of
// the calls, each timed from its start to its answer.
func parallelRun(dur time.Duration, c int, f func(i int) error) (float64, time.Duration, error) {
	all, elapsed, err := parallelCalls(dur, c, f)
	if err != nil {
		return 0, 0, err
	}
	return float64(len(all)) / elapsed.Seconds(), all.quantile(0.5), nil
}

// parallelCalls runs c workers calling f until dur has passed and returns
// the latency of every completed call and the wall time they took.
func parallelCalls(dur time.Duration, c int, f func(i int) error) (latencies, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(dur)
	lat := make([]latencies, c)
	errs := make(chan error, c)
	for i := range c {
		go func() { // owned: all c report on errs below
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
			errs <- nil
		}()
	}
	var first error
	for range c {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	elapsed := time.Since(start)
	if first != nil {
		return nil, 0, first
	}
	var all latencies
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, elapsed, nil
}
