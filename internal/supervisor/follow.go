package supervisor

import (
	"sync"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// FollowLogs returns up to n recent stderr lines of a server, oldest first,
// and a channel of every line written after them (across restarts). The
// channel is closed when cancel is called or when a config reload removes
// the server (it has no more lines to give). cancel ends the follow and
// returns how many lines were dropped because the receiver fell behind
// (transport.FollowBuffer); it must be called.
func (s *Supervisor) FollowLogs(name string, n int) (backlog []transport.Line, lines <-chan transport.Line, cancel func() (dropped int64), err error) {
	sv, err := s.lookup(name)
	if err != nil {
		return nil, nil, nil, err
	}
	backlog, lines, stop := sv.ring.Follow(n)
	done := make(chan struct{})
	var once sync.Once
	cancel = func() int64 {
		once.Do(func() { close(done) })
		return stop()
	}
	go func() { // owned: ends with the follow (cancel) or with the server
		select {
		case <-sv.rl.gone:
			stop()
		case <-done:
		}
	}()
	return backlog, lines, cancel, nil
}
