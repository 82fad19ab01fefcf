package main

import "github.com/mcpd-dev/mcpd/internal/cpuprofile"

// cpuProfileEnv names a file to write mcpd's CPU profile to when it exits,
// for a user finding where its CPU goes (docs/operations.md) and the
// benchmark (bench -mcpd-profile).
const cpuProfileEnv = "MCPD_CPUPROFILE"

// startCPUProfile starts a CPU profile when cpuProfileEnv is set; stop
// writes it out. Both are nil when it is not set.
func startCPUProfile() (stop func(), err error) { return cpuprofile.FromEnv(cpuProfileEnv) }
