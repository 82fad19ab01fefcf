// Package cpuprofile writes a process's CPU profile to the file an
// environment variable names, for the benchmarks (standard library only).
package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// FromEnv starts a CPU profile into the file the variable env names; stop
// writes it out. Both are nil when env is not set.
func FromEnv(env string) (stop func(), err error) {
	path := os.Getenv(env)
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
