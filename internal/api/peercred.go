package api

import (
	"context"
	"net"
	"os"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/peercred"
)

// AuthType is the AuthInfo.AuthType of connections accepted by
// PeerCredentials.
const AuthType = "peercred"

// ErrPeerRejected is returned by the server handshake for a connection whose
// peer is not the daemon's own user.
var ErrPeerRejected = peercred.ErrRejected

// AuthInfo is what the handshake learned about the peer of one connection:
// its uid and pid from SO_PEERCRED. Handlers and interceptors find it through
// peer.FromContext(ctx).AuthInfo.
type AuthInfo struct {
	credentials.CommonAuthInfo
	UID int
	PID int

	app *core.App // the connection as an app of the service (apps.go)
}

// AuthType implements credentials.AuthInfo.
func (AuthInfo) AuthType() string { return AuthType }

// peerCreds is a credentials.TransportCredentials that exchanges no bytes:
// its server handshake reads the peer's credentials from the kernel and
// rejects every uid but wantUID. Clients use insecure credentials; the
// security comes from the socket's permissions and this check.
type peerCreds struct {
	wantUID int
	log     *zap.Logger
}

// PeerCredentials returns transport credentials for the server side of the
// API socket that accept only connections from processes running as the
// daemon's effective uid. Rejections are logged to log, which may be nil.
func PeerCredentials(log *zap.Logger) credentials.TransportCredentials {
	if log == nil {
		log = zap.NewNop()
	}
	return &peerCreds{wantUID: os.Geteuid(), log: log}
}

// ServerHandshake checks the connection's SO_PEERCRED.
func (c *peerCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	uid, pid, err := peercred.Verify(conn, c.wantUID, c.log)
	if err != nil {
		return nil, nil, err
	}
	return conn, AuthInfo{
		// The peer is on this machine and the socket never leaves the kernel.
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		UID:            uid,
		PID:            pid,
	}, nil
}

// ClientHandshake is a no-op: these credentials are for the server side only.
func (c *peerCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, AuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, UID: -1, PID: -1}, nil
}

// Info implements credentials.TransportCredentials.
func (c *peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: AuthType}
}

// Clone implements credentials.TransportCredentials.
func (c *peerCreds) Clone() credentials.TransportCredentials {
	cp := *c
	return &cp
}

// OverrideServerName implements credentials.TransportCredentials; it is
// unused by gRPC.
func (c *peerCreds) OverrideServerName(string) error { return nil }
