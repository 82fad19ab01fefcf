package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
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
