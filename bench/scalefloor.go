package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// fanOutFloor is the scale apps curve's floor: a bare gRPC fan-out server
// (bare.go) of its own, fanning one message out to as many apps as mcpd
// does, measured in the same rounds as mcpd.
type fanOutFloor struct {
	srv   *bare
	dir   string
	sock  string
	count int64 // the last message's counter value
	// fireCPU is the server's CPU for one Fire with no app watching: the
	// part of a fan-out that is not per delivery.
	fireCPU time.Duration
}

func startFanOutFloor(ctx context.Context, reg *registry) (*fanOutFloor, error) {
	dir, err := os.MkdirTemp("", "mcpd-bench-floor-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	fl := &fanOutFloor{dir: dir, sock: filepath.Join(dir, "bare.sock"), count: bareFanOutFirst}
	if fl.srv, err = startBare(ctx, reg, fl.sock); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for range 50 { // warm the paths; no app watches counter 0
		if err := fireBare(ctx, fl.srv.conn, 0); err != nil {
			fl.close()
			return nil, err
		}
	}
	if fl.fireCPU, err = mcpdCPUPer(fl.pid(), 200, func() error { return fireBare(ctx, fl.srv.conn, 0) }); err != nil {
		fl.close()
		return nil, err
	}
	return fl, nil
}

func (fl *fanOutFloor) pid() int { return fl.srv.cmd.Process.Pid }

// fire sends the next message to the n apps watching and returns each
// one's latency.
func (fl *fanOutFloor) fire(ctx context.Context, recv <-chan receipt, errs <-chan error, n int) (latencies, error) {
	fl.count++
	if err := fireBare(ctx, fl.srv.conn, fl.count); err != nil {
		return nil, err
	}
	got, err := awaitTouch(ctx, recv, errs, fl.count, n)
	if err != nil {
		return nil, fmt.Errorf("bare fan-out: %w", err)
	}
	return got, nil
}

func (fl *fanOutFloor) close() {
	fl.srv.close()
	_ = os.RemoveAll(fl.dir)
}

// fanOutRun is one side's fan-outs: every app's latency, and the CPU of
// the process that fanned them out.
type fanOutRun struct {
	lat latencies
	cpu time.Duration
}

// fanOutBlock is how many fan-outs of one side run before the other's:
// long enough for the CPU clock (10 ms ticks where only /proc has it),
// short enough that both sides see the same machine.
const fanOutBlock = 5

// fanOutWarmUp is how many fan-outs of each side run unmeasured first:
// the first one to freshly subscribed apps costs both sides more (first
// message on every stream), and it would always fall to the side that
// goes first.
const fanOutWarmUp = 2

// fanOutSideBySide runs n fan-outs of mcpd (mcpdOnce, in process mcpdPid)
// and of the floor (bareOnce, in barePid), alternating blocks of
// fanOutBlock, each side first in turn, after fanOutWarmUp of each; each
// side's CPU is counted over its own blocks only.
func fanOutSideBySide(n, mcpdPid, barePid int, mcpdOnce, bareOnce func() (latencies, error)) (m, bare fanOutRun, err error) {
	sides := []struct {
		run  *fanOutRun
		pid  int
		once func() (latencies, error)
	}{{&m, mcpdPid, mcpdOnce}, {&bare, barePid, bareOnce}}
	for range fanOutWarmUp {
		for _, s := range sides {
			if _, err := s.once(); err != nil {
				return m, bare, err
			}
		}
	}
	for done, r := 0, 0; done < n; r++ {
		k := min(fanOutBlock, n-done)
		for _, i := range rotate(2, r) {
			s := sides[i]
			c0, err := procCPU(s.pid)
			if err != nil {
				return m, bare, err
			}
			for range k {
				got, err := s.once()
				if err != nil {
					return m, bare, err
				}
				s.run.lat = append(s.run.lat, got...)
			}
			c1, err := procCPU(s.pid)
			if err != nil {
				return m, bare, err
			}
			s.run.cpu += c1 - c0
		}
		done += k
	}
	return m, bare, nil
}
