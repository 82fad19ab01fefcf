package supervisor

import "github.com/mcpd-dev/mcpd/internal/transport"

// FollowLogs returns up to n recent stderr lines of a server, oldest first,
// and a channel of every line written after them (across restarts). cancel
// ends the follow, closes the channel and returns how many lines were
// dropped because the receiver fell behind (transport.FollowBuffer); it must
// be called.
func (s *Supervisor) FollowLogs(name string, n int) (backlog []transport.Line, lines <-chan transport.Line, cancel func() (dropped int64), err error) {
	sv, err := s.lookup(name)
	if err != nil {
		return nil, nil, nil, err
	}
	backlog, lines, cancel = sv.ring.Follow(n)
	return backlog, lines, cancel, nil
}
