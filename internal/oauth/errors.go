package oauth

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrLoginRequired is the cause of every error that a login would fix: no
// token yet, a token the server refused, a refused refresh, or a server
// asking for a wider scope. Errors wrapping it carry the hint
// "run: mcpdctl login NAME".
var ErrLoginRequired = errors.New("login required")

// ErrLoginCancelled is the cause of a login's Wait ending because the
// login was abandoned: another login of the server began, it was logged
// out, or the flow was closed.
var ErrLoginCancelled = errors.New("cancelled")

// LoginRequiredError says which server needs a login and why.
type LoginRequiredError struct {
	Server string
	// Reason is why, in a few words ("no token", "refresh refused", ...).
	Reason string
}

func (e *LoginRequiredError) Error() string {
	reason := ""
	if e.Reason != "" {
		reason = " (" + e.Reason + ")"
	}
	return fmt.Sprintf("server %q: login required%s: run: mcpdctl login %s", e.Server, reason, e.Server)
}

// Is makes errors.Is(err, ErrLoginRequired) true.
func (e *LoginRequiredError) Is(target error) bool { return target == ErrLoginRequired }

func loginRequired(server, reason string) error {
	return &LoginRequiredError{Server: server, Reason: reason}
}

// maxRemoteText bounds text taken from an authorization server's answer
// (error_description and the like) into an error.
const maxRemoteText = 200

// remoteText makes text from a remote party safe to put in an error or log:
// printable, one line, bounded.
func remoteText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) > maxRemoteText {
		s = s[:maxRemoteText] + "…"
	}
	return s
}
