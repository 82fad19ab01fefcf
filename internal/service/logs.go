package service

import "time"

// LogFollow asks for a server's stderr lines (Server "": mcpd's own log):
// the last Lines of them (zero: the default; more than the most kept:
// capped; negative is refused), then each new one.
type LogFollow struct {
	Server string
	Lines  int
}

// LogLine is one line of a log.
type LogLine struct {
	Time time.Time
	Text string
	// Truncated: the line was longer than mcpd keeps.
	Truncated bool
	// Pid is the process that wrote it.
	Pid int
}
