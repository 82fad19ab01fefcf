package main

import (
	"os"
	"testing"
	"time"
)

// The CPU clock of a process agrees with /proc/PID/stat's utime+stime to
// within its ticks, and moves with the CPU the process uses.
func TestProcessClock(t *testing.T) {
	pid := os.Getpid()
	before, ok := processClock(pid)
	if !ok {
		t.Skip("this kernel does not let a process read another's CPU clock")
	}
	// Busy until the clock has moved 30 ms: on a loaded machine that can
	// take much longer than 30 ms of wall time, so the bound is generous.
	after := before
	for start := time.Now(); after-before < 30*time.Millisecond && time.Since(start) < 10*time.Second; {
		after, _ = processClock(pid)
	}
	if after-before < 30*time.Millisecond {
		t.Errorf("CPU clock moved %v over 10 s of busy loop", after-before)
	}
	stat, err := procStatCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := processClock(pid); now < stat-2*clockTick || now > stat+2*clockTick+50*time.Millisecond {
		t.Errorf("CPU clock %v, /proc/PID/stat %v: more than its ticks apart", now, stat)
	}
}
