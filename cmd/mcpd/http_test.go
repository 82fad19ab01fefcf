package main

import (
	"net"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

func httpState(t *testing.T, srv *core.Service) service.HTTPStatus {
	t.Helper()
	st, _ := srv.Status()
	return st.HTTP
}

// TestHTTPFaceReload: a changed "httpListen" rebinds (or turns the face
// off) on reload, and the flag wins over the file.
func TestHTTPFaceReload(t *testing.T) {
	log := zaptest.NewLogger(t)
	srv := core.New(supervisor.New(supervisor.Options{Logger: log}), core.Options{Logger: log})
	cfg := &config.Config{HTTPListen: "127.0.0.1:0"}
	hf, err := startHTTPFace(resolveHTTPListen("", cfg), nil, srv, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.close()
	first := httpState(t, srv).URLs
	if len(first) != 1 || !strings.HasPrefix(first[0], "http://127.0.0.1:") {
		t.Fatalf("urls %v", first)
	}
	hf.reload("", &config.Config{HTTPListen: "off"})
	if st := httpState(t, srv); len(st.URLs) != 0 || !strings.Contains(st.OffReason, "httpListen off") {
		t.Fatalf("after off: %v", st)
	}
	hf.reload("", &config.Config{HTTPListen: "[::1]:0"})
	if st := httpState(t, srv); len(st.URLs) != 1 || !strings.HasPrefix(st.URLs[0], "http://[::1]:") {
		t.Fatalf("after rebind: %v", st)
	}
}

// TestHTTPFaceBusy: a taken default address leaves the face off with the
// reason; a taken explicit one is an error.
func TestHTTPFaceBusy(t *testing.T) {
	log := zaptest.NewLogger(t)
	srv := core.New(supervisor.New(supervisor.Options{Logger: log}), core.Options{Logger: log})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := startHTTPFace(resolveHTTPListen(l.Addr().String(), nil), nil, srv, nil, log); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("explicit busy: %v", err)
	}
	hf, err := startHTTPFace(httpListen{value: l.Addr().String(), source: "default"}, nil, srv, nil, log)
	if err != nil {
		t.Fatalf("default busy: %v", err)
	}
	defer hf.close()
	if st := httpState(t, srv); len(st.URLs) != 0 || !strings.Contains(st.OffReason, "in use") {
		t.Fatalf("default busy status %v", st)
	}
}

// TestHTTPFaceReloadsRaceClose: reloads that rebind concurrently with
// close leave nothing serving once close and they have returned.
func TestHTTPFaceReloadsRaceClose(t *testing.T) {
	log := zaptest.NewLogger(t)
	srv := core.New(supervisor.New(supervisor.Options{Logger: log}), core.Options{Logger: log})
	hf, err := startHTTPFace(resolveHTTPListen("127.0.0.1:0", nil), nil, srv, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			listen := "127.0.0.1:0"
			if i%2 == 1 {
				listen = "off"
			}
			hf.apply(httpListen{value: listen, explicit: true, source: "test"})
		})
	}
	hf.close()
	wg.Wait()
	hf.mu.Lock()
	face := hf.face
	hf.mu.Unlock()
	if face != nil {
		face.Close()
		t.Fatalf("a face at %s still serves after close", face.URL())
	}
}
