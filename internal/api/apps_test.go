package api

import (
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// An app that disconnects leaves the status: the tracker sees gRPC close
// the connection without a stats handler.
func TestGetStatusAppLeaves(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	ctx := ctxT(t)
	apps := func() int {
		t.Helper()
		resp, err := h.client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.GetApps())
	}
	other := dial(t, h.path)
	if _, err := mcpdv1.NewMcpdClient(other).GetStatus(ctx, &mcpdv1.GetStatusRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := apps(); n != 2 {
		t.Fatalf("%d apps connected, want 2", n)
	}
	other.Close()
	deadline := time.Now().Add(10 * time.Second)
	for apps() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection is still listed after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An app that only asks for status, naming itself in the metadata as
// mcpdctl does, is listed under that name.
func TestGetStatusNamesStatusOnlyApp(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	ctx := metadata.AppendToOutgoingContext(ctxT(t), mcpdv1.MetadataClientName, "mcpdctl", mcpdv1.MetadataClientVersion, "1.2")
	resp, err := h.client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range resp.GetApps() {
		got = append(got, a.GetName()+"/"+a.GetVersion())
	}
	if len(got) != 1 || got[0] != "mcpdctl/1.2" {
		t.Fatalf("apps = %v, want [mcpdctl/1.2]", got)
	}
}

// An app that registers as a host and names itself only in the metadata
// is listed under that name, as it is for every other RPC.
func TestGetStatusNamesHostByMetadata(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	ctx := metadata.AppendToOutgoingContext(ctxT(t), mcpdv1.MetadataClientName, "ide", mcpdv1.MetadataClientVersion, "7")
	host, err := h.client.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := &mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: &mcpdv1.HostRegistration{Roots: true}}}
	if err := host.Send(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Recv(); err != nil {
		t.Fatalf("registration: %v", err)
	}
	resp, err := h.client.GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{}) // same connection, no metadata
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range resp.GetApps() {
		got = append(got, a.GetName()+"/"+a.GetVersion())
	}
	if len(got) != 1 || got[0] != "ide/7" {
		t.Errorf("apps = %v, want [ide/7]", got)
	}
	if err := host.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Recv(); err != io.EOF {
		t.Fatalf("host stream ended with %v, want EOF", err)
	}
}

// fakeCreds accepts every connection, as PeerCredentials does for our uid.
type fakeCreds struct {
	credentials.TransportCredentials
}

func (fakeCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c, AuthInfo{UID: 1, PID: 42}, nil
}

// A connection without a file descriptor (net.Pipe) is tracked through
// its Close; one on a Unix socket is handed back unwrapped.
func TestTrackCredentials(t *testing.T) {
	svc := core.New(supervisor.New(supervisor.Options{}), core.Options{})
	creds := trackCredentials(svc, fakeCreds{})
	apps := func() []core.ConnectedApp { _, apps := svc.Status(); return apps }

	a, b := net.Pipe()
	defer b.Close()
	conn, ai, err := creds.ServerHandshake(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(*closeNotifyConn); !ok {
		t.Errorf("pipe conn returned as %T, want it wrapped", conn)
	}
	if ai.(AuthInfo).app == nil {
		t.Fatal("AuthInfo.app = nil, want the tracked conn")
	}
	if got := apps(); len(got) != 1 || got[0].Pid != 42 {
		t.Fatalf("snapshot = %+v, want one app with pid 42", got)
	}
	conn.Close()
	if got := apps(); len(got) != 0 {
		t.Fatalf("snapshot after close = %+v, want none", got)
	}

	server, _ := unixPair(t)
	conn, _, err = creds.ServerHandshake(server)
	if err != nil {
		t.Fatal(err)
	}
	// gRPC reads a connection with this method by readiness, from its
	// pool; it must not fall back to a buffer pinned per connection.
	if _, ok := conn.(interface {
		ReadOnReady(int, mem.BufferPool) (*[]byte, int, error)
	}); !ok {
		t.Errorf("unix conn returned as %T, which gRPC cannot read by readiness", conn)
	}
	if got := apps(); len(got) != 1 {
		t.Fatalf("snapshot = %+v, want one app", got)
	}
	server.Close()
	if got := apps(); len(got) != 0 {
		t.Fatalf("snapshot after close = %+v, want none", got)
	}
}

// unixPair returns both ends of a Unix socket connection, accepted and
// dialled, closed at the test's end.
func unixPair(t *testing.T) (accepted, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", tempdir.Short(t)+"/t.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("unix", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if accepted, err = ln.Accept(); err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { accepted.Close(); client.Close() })
	return accepted, client
}
