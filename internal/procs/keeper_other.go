//go:build !linux

package procs

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"go.uber.org/zap"
)

// Options configure a Keeper.
type Options struct {
	RecordDir string
	Cgroups   bool
	Logger    *zap.Logger
}

// Keeper is Linux only: elsewhere New returns nil, and a nil Keeper only
// starts commands (processes then have only their process group).
type Keeper struct{}

// Group is Linux only.
type Group struct{}

// New returns nil: there is no subreaper, cgroup or /proc here.
func New(Options) (*Keeper, error) { return nil, nil }

// Start starts the command newCmd builds.
func (k *Keeper) Start(_ string, newCmd func() *exec.Cmd) (*exec.Cmd, *Group, error) {
	cmd := newCmd()
	return cmd, nil, cmd.Start()
}

// Run waits for ctx.
func (k *Keeper) Run(ctx context.Context) { <-ctx.Done() }

// KillOrphans does nothing.
func (k *Keeper) KillOrphans(time.Duration) int { return 0 }

// KillLeftovers does nothing.
func (k *Keeper) KillLeftovers() int { return 0 }

// Cgroup returns "".

// Kill does nothing.
func (g *Group) Kill() {}

// Close does nothing.
func (g *Group) Close(time.Duration) {}

// CheckLimits fails: cgroups are Linux only.
func (k *Keeper) CheckLimits(l Limits) error {
	if l.IsZero() {
		return nil
	}
	return fmt.Errorf("%w: cgroups are Linux only", ErrLimits)
}

// StartLimited starts the command newCmd builds when l is zero; cgroup
// limits are Linux only.
func (k *Keeper) StartLimited(name string, l Limits, newCmd func() *exec.Cmd) (*exec.Cmd, *Group, error) {
	if err := k.CheckLimits(l); err != nil {
		return nil, nil, err
	}
	return k.Start(name, newCmd)
}

// MemoryKilled reports false.
func (g *Group) MemoryKilled() bool { return false }
