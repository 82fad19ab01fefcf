package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// refreshingAuth hands out a new token after every OnUnauthorized, which
// it answers as a successful refresh.
type refreshingAuth struct {
	refreshes atomic.Int32
}

func (a *refreshingAuth) Token(context.Context) (string, error) {
	return fmt.Sprintf("token-%d", a.refreshes.Load()), nil
}

func (a *refreshingAuth) OnUnauthorized(context.Context, *http.Response) error {
	a.refreshes.Add(1)
	return nil
}

// A server that refuses the fresh token as well needs a login: the second
// 401 ends the request without another refresh.
func TestSecond401NeedsLoginWithoutAnotherRefresh(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	auth := &refreshingAuth{}
	_, err := tryConnect(t, remote.Options{URL: srv.URL, Authorizer: auth}, session.ProtocolAuto)
	if !errors.Is(err, remote.ErrLoginRequired) {
		t.Fatalf("handshake with a server refusing every token: %v, want login required", err)
	}
	if n, r := auth.refreshes.Load(), requests.Load(); n != 1 || r != 2 {
		t.Fatalf("%d refreshes over %d requests, want 1 refresh and 1 retry", n, r)
	}
}
