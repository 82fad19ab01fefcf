package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
)

// netError says a transport error plainly: the url.Error wrapper (whose
// URL may carry credentials) is dropped, and refused connections, TLS
// failures and resets are named as such.
func netError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var (
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		cie x509.CertificateInvalidError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie):
		return fmt.Errorf("TLS: the server's certificate is not trusted: %w", err)
	case errors.As(err, &rhe):
		return fmt.Errorf("TLS: the server does not speak TLS (is the URL http://?): %w", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection refused: %w", err)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("connection reset: %w", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("connection closed in the middle of a message: %w", err)
	case errors.Is(err, io.EOF):
		// Not wrapped: io.EOF would read as a clean end of the stream.
		return errors.New("the server closed the connection")
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot resolve the host: %w", err)
	}
	return err
}

// Unreachable reports whether err is a network failure: the server could
// not be reached at all (connection refused, no route, DNS, a TLS
// handshake that failed, a dial or I/O timeout), as opposed to a server
// that answered badly or dropped a connection it had accepted. It decides
// by the types in err's chain, never by its text. The deadline of mcpd's
// own context (a call's or a start's) is not a network failure, unless
// it ran out with no connection made (ConnectTimeoutError).
func Unreachable(err error) bool {
	if errors.As(err, new(*ConnectTimeoutError)) {
		return true
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
		netErr net.Error
	)
	switch {
	case errors.As(err, &dnsErr), tlsHandshakeFailed(err),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, os.ErrDeadlineExceeded):
		return true
	case errors.As(err, &opErr) && (opErr.Op == "dial" || opErr.Op == "proxyconnect"):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true // a dial or TLS handshake timeout of the HTTP transport
	}
	return false
}

// tlsHandshakeFailed reports whether err is a failed TLS handshake: a
// certificate not trusted, or a peer that does not speak TLS.
func tlsHandshakeFailed(err error) bool {
	var (
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		cie x509.CertificateInvalidError
		rhe tls.RecordHeaderError
		ale tls.AlertError
	)
	return errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &hne) ||
		errors.As(err, &cie) || errors.As(err, &rhe) || errors.As(err, &ale)
}

// ConnectTimeoutError is a start that ran out of time before any
// connection to the server was made: a dial that hung (a host that does
// not answer, a full listen queue, a dropped route). It is a network
// failure (Unreachable); a server that accepted a connection and then
// did not answer in time is not.
type ConnectTimeoutError struct {
	where string
}

func (e *ConnectTimeoutError) Error() string {
	return fmt.Sprintf("connecting to %s timed out: no connection was made (the host does not answer)", e.where)
}

// Timeout is true: it is a timeout.
func (e *ConnectTimeoutError) Timeout() bool { return true }

// ConnectTimedOut is, for a start that ran out of time, a
// ConnectTimeoutError when the Conn never made a connection to its
// server; otherwise nil.
func (c *Conn) ConnectTimedOut() error {
	if c.reached.Load() {
		return nil
	}
	return &ConnectTimeoutError{where: c.where}
}
