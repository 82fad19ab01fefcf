package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (user + system, all threads, those that exited
// too) pid used so far: from the process's CPU-time clock, to the
// nanosecond, else from /proc/PID/stat, in clockTicks.
func procCPU(pid int) (time.Duration, error) {
	// One source per process, so that a measurement never subtracts a
	// reading of one from a reading of the other.
	if v, known := statOnly.Load(pid); !known || !v.(bool) {
		if d, ok := processClock(pid); ok {
			statOnly.LoadOrStore(pid, false)
			return d, nil
		}
		if known {
			return 0, fmt.Errorf("CPU clock of %d: no longer readable", pid)
		}
		statOnly.Store(pid, true)
	}
	return procStatCPU(pid)
}

// statOnly records, by pid, whether its CPU time comes from /proc/PID/stat
// (true) or from its CPU clock (false).
var statOnly sync.Map

// processClock reads pid's CPU-time clock, the clock clock_getcpuclockid
// names (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)): the scheduler's
// run time of every thread of the process, the time utime and stime add
// up to.
func processClock(pid int) (time.Duration, bool) {
	const cpuclockSched = 2
	if pid <= 0 {
		return 0, false // ^pid<<3 would name the caller's own clocks
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|cpuclockSched), &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// procStatCPU is procCPU from /proc/PID/stat.
func procStatCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// The command name is in parentheses and may contain spaces; utime
	// and stime are fields 14 and 15, the 12th and 13th after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}
