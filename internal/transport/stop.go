package transport

import (
	"errors"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Stop runs the stop sequence: close stdin, wait ShutdownGrace, SIGTERM the
// process group, wait ShutdownGrace, SIGKILL the group, reap. It returns once
// the child has been reaped. Stop is idempotent and safe to call concurrently.
//
// Every call returns only once Done is closed. The error is nil unless a
// signal could not be sent (a group that is already gone is not an error);
// how the child exited is reported by ExitError.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stopSequence() })
	<-p.done
	return p.stopErr
}

// stopSequence implements the MCP stdio shutdown (the specification's
// lifecycle, "Shutdown": close stdin, then SIGTERM, then SIGKILL).
func (p *Process) stopSequence() error {
	p.stopping.Store(true)
	p.log.Debug("stopping child", zap.Duration("shutdown_grace", p.grace))

	// "1. Close the child's `stdin`."
	p.closeStdin()
	// "2. Wait for the child to exit."
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.exitedCh:
		return nil
	case <-t.C:
	}

	// "3. If it does not exit within a reasonable time, terminate it: on
	// POSIX escalate `SIGTERM`, then (after another wait) `SIGKILL`."
	p.log.Debug("child ignored stdin close, sending sigterm")
	termErr := p.signal(syscall.SIGTERM)
	t.Reset(p.grace)
	select {
	case <-p.exitedCh:
		return termErr
	case <-t.C:
	}

	p.log.Warn("child ignored sigterm, sending sigkill", zap.Duration("shutdown_grace", p.grace))
	killErr := p.signal(syscall.SIGKILL)
	return errors.Join(termErr, killErr)
}

// Kill sends SIGKILL to the process group at once and returns without waiting.
// It does nothing once the child has exited (the group was killed then).
func (p *Process) Kill() {
	if err := p.signal(syscall.SIGKILL); err != nil {
		p.log.Warn("kill child", zap.Error(err))
	}
}
