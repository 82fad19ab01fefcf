package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// CancelWriteTimeout bounds the write of a notifications/cancelled: it is
// best effort, and a child whose stdin is full (the usual reason a call
// timed out) must not hold the caller any longer than that.
const CancelWriteTimeout = 250 * time.Millisecond

// HungReporter is implemented by a Conn that gives up on a child that
// stopped reading its stdin (*transport.Process does): Hung returns why, or
// nil. Calls failing because that child went away carry the reason.
type HungReporter interface {
	Hung() error
}

// hung returns the conn's Hung error, if it has one.
func (s *Session) hung() error {
	if r, ok := s.conn.(HungReporter); ok {
		return r.Hung()
	}
	return nil
}

// Notify sends a notification to the child; the write waits no longer than
// ctx allows.
func (s *Session) Notify(ctx context.Context, method string, params json.RawMessage) error {
	b, err := jsonrpc.AppendString([]byte(`{"jsonrpc":"2.0","method":`), method)
	if err != nil {
		return fmt.Errorf("notify %q: %w", s.opts.Server, err)
	}
	if len(params) > 0 {
		b = append(append(b, `,"params":`...), params...)
	}
	b = append(b, '}')
	if err := s.conn.WriteMessage(ctx, b); err != nil {
		return fmt.Errorf("%s: %w", method, s.failedWrite(ctx, err))
	}
	return nil
}

// sendCancel writes notifications/cancelled with params p for request id,
// within CancelWriteTimeout; failing that, it is dropped.
func (s *Session) sendCancel(id uint64, p json.RawMessage) {
	ctx, cancel := context.WithTimeout(s.lifetime, CancelWriteTimeout)
	defer cancel()
	if err := s.Notify(ctx, methodCancelled, p); err != nil {
		s.log.Debug("send cancel failed", zap.Uint64("id", id), zap.Error(err))
	}
}

// failedWrite is the error of a request or notification whose write
// failed with err: ctx's end keeps its error (the Conn's, which says that
// the child's stdin was full); a child found hung fails every call waiting
// for an answer with the reason (it is being killed); anything else means
// the child is gone.
func (s *Session) failedWrite(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	case errors.Is(err, transport.ErrHung):
		s.FailCalls(err)
		return err
	}
	return s.writeErr(err)
}

func (s *Session) writeErr(err error) error {
	s.mu.Lock()
	closed := s.closedErr
	s.mu.Unlock()
	if closed != nil {
		return closed
	}
	return fmt.Errorf("server %q: write: %w: %w", s.opts.Server, ErrClosed, err)
}
