package main

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestNewGovernor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(4) // as if Go's default were 4 CPUs
	newGovernor(0)
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Errorf("automatic on 4 CPUs: GOMAXPROCS %d, want half, 2, until calls pile up", n)
	}
	runtime.GOMAXPROCS(1)
	newGovernor(0)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("automatic on 1 CPU: GOMAXPROCS %d, want 1", n)
	}
	newGovernor(3)
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("--procs 3: GOMAXPROCS %d", n)
	}

	// $GOMAXPROCS, set by the user, is what Go applied at start: kept.
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	newGovernor(0)
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("with $GOMAXPROCS=3: GOMAXPROCS %d, want 3 kept", n)
	}
}

func TestParseFlagsProcs(t *testing.T) {
	if f, err := parseFlags([]string{"--procs", "2"}, io.Discard); err != nil || f.procs != 2 {
		t.Errorf("--procs 2: %+v, %v", f, err)
	}
	if _, err := parseFlags([]string{"--procs", "-1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--procs") {
		t.Errorf("--procs -1: %v, want an error naming --procs", err)
	}
}
