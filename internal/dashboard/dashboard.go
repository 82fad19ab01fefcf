package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/httpface"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// AppName is how the dashboard is listed among the connected apps.
const AppName = "mcpd dashboard"

// Prefix is the path under which the dashboard serves everything but its
// page, which is at "/".
const Prefix = "/dashboard/"

// maxBody bounds a POST's body (a tool's arguments).
const maxBody = 4 << 20

// defaultRefresh is how often the event stream sends a fresh snapshot
// when no state changed, for the counters, memory and countdowns.
const defaultRefresh = 3 * time.Second

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/index.html"))

// Options configure a Dashboard.
type Options struct {
	// Server is the daemon's service; Backend its in-process streams
	// (state events, log follow). Both required.
	Server  *core.Service
	Backend *httpface.Backend
	// Logger may be nil.
	Logger *zap.Logger
	// Refresh is how often the event stream sends a snapshot without a
	// state change. If zero, 3s.
	Refresh time.Duration
}

// Dashboard is the http.Handler of the live page and its data endpoints.
// It must be served behind an httpface.Face, whose checks it relies on.
// Its methods are safe for concurrent use; Close is idempotent.
type Dashboard struct {
	srv     *core.Service
	be      *httpface.Backend
	log     *zap.Logger
	refresh time.Duration
	key     []byte // the HMAC key of page tokens, for the daemon's life
	mux     *http.ServeMux
	on      atomic.Bool
	cfg     atomic.Pointer[config.Config] // for what status does not say (pin modes, secret values to mask)

	// stop is cancelled by Close: it ends the logins begun from the page
	// (login.go), whose goroutines logins counts.
	stop   context.Context
	cancel context.CancelFunc
	logins sync.WaitGroup

	mu     sync.Mutex // guards app, closed, flows and loginErr; held for no call into core.Service
	app    *core.App
	closed bool
	// flows is the login begun from the page of each server, while it is
	// awaited; loginErr why the last one of a server failed.
	flows    map[string]*oauth.LoginFlow
	loginErr map[string]string
}

// New returns a dashboard, on.
func New(opts Options) *Dashboard {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	d := &Dashboard{srv: opts.Server, be: opts.Backend, log: log, refresh: opts.Refresh, key: make([]byte, 32),
		flows: map[string]*oauth.LoginFlow{}, loginErr: map[string]string{}}
	d.stop, d.cancel = context.WithCancel(context.Background())
	if d.refresh <= 0 {
		d.refresh = defaultRefresh
	}
	rand.Read(d.key)
	d.on.Store(true)
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", d.servePage)
	m.Handle("GET "+Prefix+"assets/", http.StripPrefix(Prefix, http.FileServerFS(assets)))
	m.HandleFunc("GET "+Prefix+"api/ping", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, map[string]bool{"ok": true}) })
	m.HandleFunc("GET "+Prefix+"api/status", d.serveStatus)
	m.HandleFunc("GET "+Prefix+"api/events", d.serveEvents)
	m.HandleFunc("GET "+Prefix+"api/servers/{name}/tools", d.serveTools)
	m.HandleFunc("GET "+Prefix+"api/servers/{name}/pins", d.servePins)
	m.HandleFunc("GET "+Prefix+"api/servers/{name}/logs", d.serveLogs)
	m.HandleFunc("GET "+Prefix+"api/servers/{name}/logs/follow", d.serveFollow)
	m.HandleFunc("GET "+Prefix+"api/servers/{name}/audit", d.serveAudit)
	m.HandleFunc("POST "+Prefix+"api/servers/{name}/{action}", d.serveAction)
	d.mux = m
	return d
}

// SetEnabled turns the dashboard on or off (the config's "dashboard");
// off, it owns no path.
func (d *Dashboard) SetEnabled(on bool) { d.on.Store(on) }

// Enabled reports whether the dashboard is on.
func (d *Dashboard) Enabled() bool { return d.on.Load() }

// SetConfig gives the dashboard the config in effect, for the pin modes
// status does not report and the secret values it must mask; nil keeps
// nothing.
func (d *Dashboard) SetConfig(c *config.Config) { d.cfg.Store(c) }

// Owns reports whether the dashboard, when on, serves path.
func (d *Dashboard) Owns(path string) bool {
	return d.on.Load() && (path == "/" || strings.HasPrefix(path, Prefix))
}

// Close abandons the logins begun from the page and waits for them, and
// removes the dashboard's app from status; its streams end with the
// face's requests, whose contexts the face cancels.
func (d *Dashboard) Close() {
	d.mu.Lock()
	d.closed = true
	a := d.app
	d.app = nil
	d.mu.Unlock()
	d.cancel()
	d.logins.Wait()
	if a != nil {
		a.Close()
	}
}

// localApp is the dashboard's app, registered with the service on first
// use: its calls are budgeted and tracked as an app's, named AppName.
func (d *Dashboard) localApp() (*core.App, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("dashboard: closed")
	}
	if d.app == nil {
		d.app = d.srv.NewLocalApp(core.TransportDashboard, AppName, os.Geteuid(), os.Getpid())
		d.app.Identify(AppName, false)
	}
	return d.app, nil
}

// callerContext is ctx with the dashboard's app as the caller of the
// backend's streams (httpface.Backend finds it there).
func (d *Dashboard) callerContext(ctx context.Context) (context.Context, error) {
	a, err := d.localApp()
	if err != nil {
		return nil, err
	}
	return bridge.WithCaller(ctx, a), nil
}

// ServeHTTP serves the page and the data endpoints, with security headers
// on every response, and refuses a cross-site fetch of anything but the
// page itself.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.URL.Path != "/" {
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin", "none":
		default:
			d.log.Warn("dashboard request refused: cross-site", zap.String("path", r.URL.Path), zap.String("remote_addr", r.RemoteAddr))
			http.Error(w, "Forbidden: cross-site request", http.StatusForbidden)
			return
		}
	}
	d.mux.ServeHTTP(w, r)
}

// port is the local port r arrived on (0: a unix socket).
func (d *Dashboard) port(r *http.Request) int {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// servePage serves the page with its token, starting a session when the
// browser has none.
func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) {
	id := d.session(r)
	if id == "" {
		id = newSessionID()
		http.SetCookie(w, &http.Cookie{Name: cookieName(d.port(r)), Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, map[string]string{"Token": d.token(id)}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// writeError answers err, a service error (service.Error), with its
// code's HTTP status, its message and, when mcpd classed it, its class
// ("reason", as ErrorReason without its prefix: "NOT_REMOTE").
func writeError(w http.ResponseWriter, err error) {
	e := service.ErrorOf(err)
	code := httpStatus(e.Code.String())
	out := map[string]string{"error": e.Message, "code": e.Code.String()}
	if e.Class != "" {
		out["reason"] = strings.TrimPrefix(string(e.Class), "ERROR_REASON_")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(out)
}

// httpStatus maps a code's name (service.Code) to an HTTP status.
func httpStatus(code string) int {
	switch code {
	case "NotFound":
		return http.StatusNotFound
	case "InvalidArgument":
		return http.StatusBadRequest
	case "FailedPrecondition", "Aborted":
		return http.StatusConflict
	case "Unavailable":
		return http.StatusServiceUnavailable
	case "DeadlineExceeded":
		return http.StatusGatewayTimeout
	case "PermissionDenied":
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// readBody reads a POST's JSON body into v (an empty body leaves v).
func readBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return err
	}
	if len(data) > maxBody {
		return errors.New("body too large")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return json.Unmarshal(data, v)
}
