package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file to write mcpd's CPU profile to when it exits,
// for the benchmark (mcpd-bench -mcpd-profile).
const cpuProfileEnv = "MCPD_CPUPROFILE"

// startCPUProfile starts a CPU profile when cpuProfileEnv is set; stop
// writes it out. Both are nil when it is not set.
func startCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
