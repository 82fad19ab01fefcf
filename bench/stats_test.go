package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestQuantileAndMedian(t *testing.T) {
	var l latencies
	for i := 100; i >= 1; i-- { // unsorted on purpose
		l = append(l, time.Duration(i)*time.Microsecond)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50 * time.Microsecond},
		{0.99, 99 * time.Microsecond},
		{1, 100 * time.Microsecond},
		{0, time.Microsecond},
	}
	for _, tt := range tests {
		if got := l.quantile(tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if l[0] != 100*time.Microsecond {
		t.Error("quantile sorted its receiver in place")
	}
	if got := medianDur([]time.Duration{3, 1, 2, 10}); got != 2 { // (2+3)/2 in integer ns
		t.Errorf("medianDur = %v, want 2ns", got)
	}
	if got := medianF([]float64{5, 1, 3}); got != 3 {
		t.Errorf("medianF = %v, want 3", got)
	}
}

func TestRotateStartsEachRoundElsewhere(t *testing.T) {
	var firsts []int
	for r := range 3 {
		o := rotate(3, r)
		s := slices.Clone(o)
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 1, 2}) {
			t.Fatalf("rotate(3, %d) = %v, not a permutation", r, o)
		}
		firsts = append(firsts, o[0])
	}
	if !slices.Equal(firsts, []int{0, 1, 2}) {
		t.Errorf("first variants of rounds 0..2 = %v, want 0 1 2", firsts)
	}
}

func TestProcessMemoryAndTree(t *testing.T) {
	m, err := smapsRollup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.PSS <= 0 || m.PSS > m.RSS {
		t.Errorf("own memory = %+v, want 0 < PSS <= RSS", m)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		killPids([]int{pid})
		_ = cmd.Wait()
	})
	if !slices.Contains(descendants(os.Getpid()), pid) {
		t.Errorf("descendants of the test process lack child %d", pid)
	}
	if !alive(pid) {
		t.Errorf("alive(%d) = false for a running child", pid)
	}
	killPids([]int{pid})
	_ = cmd.Wait()
	if left := waitGone([]int{pid}, 5*time.Second); len(left) != 0 {
		t.Errorf("child %d still alive after SIGKILL and reap", pid)
	}
}

func TestParallelRunRateAndLatency(t *testing.T) {
	rate, p50, err := parallelRun(200*time.Millisecond, 4, func(int) error {
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p50 < 2*time.Millisecond || p50 > 100*time.Millisecond {
		t.Errorf("p50 = %v, want about the 2 ms each call sleeps", p50)
	}
	if rate <= 0 || rate > 4/0.002 {
		t.Errorf("rate = %.0f/s, want at most 4 workers / 2 ms", rate)
	}
	boom := errors.New("boom")
	if _, _, err := parallelRun(50*time.Millisecond, 2, func(int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("error = %v, want the call's error", err)
	}
}
