package main

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// registry remembers every process the benchmark started (directly or
// through mcpd), so that the end of the run can verify none is left.
type registry struct {
	mu   sync.Mutex // guards pids
	pids []int
}

// add records pids.
func (r *registry) add(pids ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pids {
		if p > 0 && !slices.Contains(r.pids, p) {
			r.pids = append(r.pids, p)
		}
	}
}

// verifyGone waits briefly for every recorded process to be gone, kills
// (by pid) any that is left, and reports them as an error.
func (r *registry) verifyGone() error {
	r.mu.Lock()
	pids := slices.Clone(r.pids)
	r.mu.Unlock()
	left := waitGone(pids, 10*time.Second)
	if len(left) == 0 {
		return nil
	}
	killPids(left)
	return fmt.Errorf("processes left running after the benchmark (killed now): %v", left)
}

// count returns how many processes were started.
func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pids)
}
