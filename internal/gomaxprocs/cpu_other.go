//go:build !unix

package gomaxprocs

import "time"

// cpuMeasured says that processCPU does not measure here: every window
// counts as busy, and the calls in flight alone move the count.
const cpuMeasured = false

func processCPU() time.Duration { return 0 }
