package session

import "fmt"

// HandshakeError is a failed era negotiation of one server; it matches
// ErrHandshake. A caller that names the server itself (the supervisor's
// "start "x": ...") says Err after its own words, so that the server is
// named once.
type HandshakeError struct {
	Server string
	Err    error // what failed: "initialize: mcp error -32602: ..."
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("server %q: handshake failed: %v", e.Server, e.Err)
}

func (e *HandshakeError) Unwrap() error        { return e.Err }
func (e *HandshakeError) Is(target error) bool { return target == ErrHandshake }

// handshakeErrorf is the HandshakeError of s's server whose Err is
// formatted as by fmt.Errorf (%w wraps).
func (s *Session) handshakeErrorf(format string, args ...any) error {
	return &HandshakeError{Server: s.opts.Server, Err: fmt.Errorf(format, args...)}
}
