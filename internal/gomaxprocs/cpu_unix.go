//go:build unix

package gomaxprocs

import (
	"syscall"
	"time"
)

// cpuMeasured says that processCPU measures.
const cpuMeasured = true

// processCPU is the user and system CPU time of the whole process so far
// (0 if getrusage fails, which it does only for a bad argument).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
