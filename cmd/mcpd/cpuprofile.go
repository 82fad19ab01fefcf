package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file to write mcpd's CPU profile to, written when
// mcpd exits: for profiling under the benchmark (BENCHMARKS.md).
const cpuProfileEnv = "MCPD_CPUPROFILE"

// startCPUProfile starts a CPU profile when cpuProfileEnv is set; stop
// writes it out. stop is a no-op when it is not set.
func startCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
