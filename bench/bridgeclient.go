package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
