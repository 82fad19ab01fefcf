package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
)

// tokenHeader carries the page's token on every POST.
const tokenHeader = "X-Mcpd-Token"

// sessionIDLen is the length of a session id, in hex digits.
const sessionIDLen = 64

// cookieName is the session cookie of the dashboard on port (0: a unix
// socket). Cookies are shared by every port of a host, so the name
// carries the port: two daemons on one machine do not share a session.
func cookieName(port int) string {
	return "mcpd-dashboard-" + strconv.Itoa(port)
}

// newSessionID returns a fresh random session id.
func newSessionID() string {
	var b [sessionIDLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validSessionID reports whether id has the shape newSessionID gives.
func validSessionID(id string) bool {
	if len(id) != sessionIDLen {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// token is the page token of session id: an HMAC under the dashboard's
// key, which only this daemon knows, so that knowing the cookie (any
// page on 127.0.0.1 is sent it) is not enough to make a token.
func (d *Dashboard) token(id string) string {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// session returns the request's session id, "" when it has none.
func (d *Dashboard) session(r *http.Request) string {
	c, err := r.Cookie(cookieName(d.port(r)))
	if err != nil || !validSessionID(c.Value) {
		return ""
	}
	return c.Value
}

// tokenValid reports whether r carries the token of its own session.
func (d *Dashboard) tokenValid(r *http.Request) bool {
	id := d.session(r)
	got := r.Header.Get(tokenHeader)
	if id == "" || got == "" {
		return false
	}
	return hmac.Equal([]byte(got), []byte(d.token(id)))
}
