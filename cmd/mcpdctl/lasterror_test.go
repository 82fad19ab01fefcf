package main

import (
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The LAST ERROR cell shows the last error, else an unclean last exit; a
// server that was stopped or restarted and exited 0 shows none; on a ready
// server it is said to be the previous process's.
func TestLastErrorCell(t *testing.T) {
	for _, tt := range []struct {
		name, lastError, lastExit, want string
		ready                           bool
	}{
		{"nothing", "", "", "", false},
		{"clean exit after a stop", "", "exit status 0", "", false},
		{"idle stop", "", "idle timeout (exit status 0)", "", false},
		{"idle stop that had to be killed", "", "idle timeout (signal: killed)", "exited: idle timeout (signal: killed)", false},
		{"killed", "", "signal: killed", "exited: signal: killed", false},
		{"exit status 1", "", "exit status 1", "exited: exit status 1", false},
		{"error wins", "crash loop", "exit status 0", "crash loop", false},
		{"stderr's first line", "start \"x\": exited (exit status 2); last stderr lines:\n  bad flag -t\n  usage", "exit status 2",
			"start \"x\": exited (exit status 2): bad flag -t", false},
		{"ready again after a kill", "", "signal: killed", "previous process: exited: signal: killed", true},
		{"ready after a clean stop", "", "exit status 0", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &mcpdv1.ServerStatus{LastError: tt.lastError, LastExit: tt.lastExit}
			if tt.ready {
				s.State = mcpdv1.ServerState_SERVER_STATE_READY
			}
			if got := lastErrorCell(s); got != tt.want {
				t.Errorf("lastErrorCell = %q, want %q", got, tt.want)
			}
		})
	}
}

// UPTIME is shown for every running server, a remote one (no pid) too.
func TestUptimeCell(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    *mcpdv1.ServerStatus
		want string
	}{
		{"stopped", &mcpdv1.ServerStatus{}, "-"},
		{"child", &mcpdv1.ServerStatus{Pid: 42, StartedAtUnixMs: 1, UptimeMs: 61_000}, formatDuration(61_000)},
		{"remote", &mcpdv1.ServerStatus{StartedAtUnixMs: 1, UptimeMs: 61_000}, formatDuration(61_000)},
	} {
		if got := uptimeCell(tt.s); got != tt.want {
			t.Errorf("%s: uptimeCell = %q, want %q", tt.name, got, tt.want)
		}
	}
}
