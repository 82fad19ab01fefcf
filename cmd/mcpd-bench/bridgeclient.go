package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// The stdio bridge variant: a real "mcpdctl bridge NAME" process on the
// benchmark's mcpd, driven over its stdin/stdout by the same transport and
// session code as the direct column, so that the two differ only by the
// path (bridge → gRPC → mcpd → child instead of the child itself).

// profileEnv names the file "mcpdctl bridge" writes a CPU profile to.
const profileEnv = "MCPDCTL_CPUPROFILE"

// startBridge starts the bridge for t on mcpd's socket and negotiates the
// era with it; label names its CPU profile when -bridge-profile is set.
func (b *bench) startBridge(ctx context.Context, socket string, t target, label string) (*direct, error) {
	bt := target{Name: t.Name, Command: b.o.mcpdctl, Args: []string{"--socket", socket, "bridge", t.Name}}
	var env []string
	if b.o.bridgeProfile != "" {
		path := filepath.Join(b.o.bridgeProfile, "bridge-"+label+"-"+t.Name+".pprof")
		env = append(os.Environ(), profileEnv+"="+path)
	}
	proc, err := transport.Start(transport.Options{
		Name:          "bridge-" + t.Name,
		Command:       bt.Command,
		Args:          bt.Args,
		Env:           env,
		ShutdownGrace: 5 * time.Second, // room to write the profile
		Logger:        zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("start mcpdctl bridge %s: %w", t.Name, err)
	}
	b.reg.add(proc.Pid())
	sess := session.New(proc, session.Options{Server: "bridge-" + t.Name, Logger: zap.NewNop()})
	d := &direct{t: t, proc: proc, sess: sess}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := sess.Handshake(hctx); err != nil {
		d.close()
		return nil, fmt.Errorf("handshake with mcpdctl bridge %s: %w", t.Name, err)
	}
	return d, nil
}

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (user + system, all threads) pid used so far,
// from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
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
