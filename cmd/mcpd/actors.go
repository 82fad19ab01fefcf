package main

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/version"
)

// addServing adds to g an actor that runs serve until it returns or the
// group is interrupted, and then runs stop, which must make serve return.
//
// run.Group calls the interrupts one after another, so a blocking
// interrupt would delay every actor added after it: a gRPC graceful stop
// waiting on an open stream would hold back the supervisor's stop of the
// children by its whole timeout, past the shutdown bound. The interrupt
// here only signals; the stop runs in the actor, in parallel with the
// other actors' stops, and Run still waits for it.
func addServing(g *run.Group, serve func() error, stop func()) {
	stopc := make(chan struct{})
	var once sync.Once
	g.Add(func() error {
		errc := make(chan error, 1)
		go func() { errc <- serve() }() // owned: received below in both paths
		select {
		case err := <-errc:
			stop() // release what serve left open
			return err
		case <-stopc:
			stop()
			return <-errc
		}
	}, func(error) {
		once.Do(func() { close(stopc) })
	})
}

// addGRPCActor adds gs serving ln to g. Once interrupted, it calls
// beginShutdown and stops gs gracefully, cutting whatever is still open
// after stopTimeout.
func addGRPCActor(g *run.Group, gs *grpc.Server, ln net.Listener, stopTimeout time.Duration, log *zap.Logger, beginShutdown func()) {
	addServing(g, func() error {
		log.Info("serving", zap.String("socket_path", ln.Addr().String()), zap.String("version", version.Version))
		err := gs.Serve(ln)
		log.Debug("grpc server stopped")
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil // stopped before Serve began
		}
		return err
	}, func() {
		beginShutdown()
		log.Debug("stopping grpc server")
		stopGRPC(gs, stopTimeout)
	})
}

// stopGRPC stops gs gracefully, waiting at most timeout for in-flight calls,
// then closes whatever is left (open streams would block GracefulStop).
func stopGRPC(gs *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() { // owned: waited for below in both paths
		gs.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		gs.Stop()
		<-done
	}
}
