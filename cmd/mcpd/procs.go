package main

import (
	"context"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/procs"
)

// envCgroups set to "off" keeps every server in mcpd's own cgroup; the
// process groups and /proc tracking then stand alone.
const envCgroups = "MCPD_CGROUPS"

// orphanReapLimit bounds how long mcpd waits, at exit, for the processes
// its servers left behind to die after SIGKILL.
const orphanReapLimit = time.Second

// startKeeper makes mcpd the subreaper of its servers' processes, kills what
// a killed mcpd on the same socket left behind (call it once the socket is
// ours), and reaps orphans until stop, which first kills every process
// still left (call it once every server has stopped). Without a keeper
// (not Linux, or prctl failed) children have their process group only.
func startKeeper(socketPath string, log *zap.Logger) (k *procs.Keeper, stop func()) {
	k, err := procs.New(procs.Options{
		RecordDir: paths.RecordDir(socketPath),
		Cgroups:   os.Getenv(envCgroups) != "off",
		Logger:    log,
	})
	if err != nil {
		log.Warn("cannot track the processes of servers beyond their process group", zap.Error(err))
		return nil, func() {}
	}
	k.KillLeftovers()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned: stop waits for it
		defer close(done)
		k.Run(ctx)
	}()
	return k, func() {
		// Run first, so that no scan of its own races the last one.
		cancel()
		<-done
		k.KillOrphans(orphanReapLimit)
	}
}
