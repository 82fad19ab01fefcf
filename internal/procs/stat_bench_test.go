//go:build linux

package procs

import "testing"

// BenchmarkScanProc is one scan of /proc, as the keeper does every second
// for as long as a server runs without a cgroup of its own.
func BenchmarkScanProc(b *testing.B) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = len(scanProc().procs)
	}
	b.ReportMetric(float64(n), "procs")
}
