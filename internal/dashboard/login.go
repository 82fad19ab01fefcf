package dashboard

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// loginTimeout bounds how long a login begun from the page waits for the
// authorization server's redirect, as mcpdctl login's default timeout.
const loginTimeout = 10 * time.Minute

// serveLogin begins the OAuth login of a remote server in mcpd and answers
// its authorization URL, for the page to open in a new window. The
// redirect comes back to mcpd's loopback listener; mcpd exchanges the code,
// keeps the token and restarts the server, which the page sees live. The
// answer carries the URL only: never a token, code or verifier.
func (d *Dashboard) serveLogin(w http.ResponseWriter, r *http.Request, name string) {
	u, err := d.beginLogin(r.Context(), name)
	if err != nil {
		d.log.Info("dashboard: login not begun", zap.String("server", name), zap.Error(err))
		writeError(w, err)
		return
	}
	d.log.Info("dashboard: login begun; waiting for the authorization server's redirect", zap.String("server", name))
	writeJSON(w, map[string]string{"authorizationUrl": u})
}

// beginLogin begins server's login and awaits it in a goroutine that
// Close waits for; it returns the authorization URL.
func (d *Dashboard) beginLogin(ctx context.Context, server string) (string, error) {
	flow, err := d.srv.BeginLogin(ctx, server, nil)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		flow.Close()
		return "", service.Errorf(service.Unavailable, "dashboard: closed")
	}
	d.logins.Add(1)
	d.flows[server] = flow
	delete(d.loginErr, server)
	d.mu.Unlock()
	go func() { // owned: Close cancels d.stop and waits for d.logins
		defer d.logins.Done()
		d.awaitLogin(server, flow)
	}()
	return flow.URL, nil
}

// awaitLogin waits for flow (at most loginTimeout, or until Close) and
// keeps why it failed for the page; a login abandoned for another keeps
// nothing.
func (d *Dashboard) awaitLogin(server string, flow *oauth.LoginFlow) {
	ctx, cancel := context.WithTimeout(d.stop, loginTimeout)
	defer cancel()
	_, err := d.srv.FinishLogin(ctx, server, flow)
	why := ""
	switch code := service.CodeOf(err); {
	case err == nil:
		d.log.Info("dashboard: logged in", zap.String("server", server))
	case code == service.Aborted || d.stop.Err() != nil:
	case code == service.DeadlineExceeded:
		why = "no answer from the authorization server within " + loginTimeout.String() + "; log in again"
	default:
		why = err.Error()
	}
	if err != nil && why != "" {
		d.log.Warn("dashboard: login failed", zap.String("server", server), zap.String("error", d.mask(server, why)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flows[server] != flow {
		return // a newer login of the server says how it went
	}
	delete(d.flows, server)
	if why != "" {
		d.loginErr[server] = d.mask(server, why)
	}
}

// loginError is why the last login of server begun from the page failed
// ("" when none did).
func (d *Dashboard) loginError(server string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loginErr[server]
}
