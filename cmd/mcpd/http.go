package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/dashboard"
	"github.com/mcpd-dev/mcpd/internal/httpface"
)

// httpHandler is the MCP handler of the HTTP face: an http.Handler whose
// Close ends its sessions and streams.
type httpHandler interface {
	http.Handler
	Close()
	// Reconfigure applies a reloaded config's profiles to the running
	// sessions and bridges.
	Reconfigure(ctx context.Context)
}

// newHTTPHandler builds the handler that serves MCP hosts over be at /mcp
// (every server) and /servers/NAME/mcp. Requests are bounded by each
// server's own timeout in the supervisor, bodies by the bridge's default
// line limit.
func newHTTPHandler(be bridge.Backend, log *zap.Logger) httpHandler {
	return bridge.NewHTTPHandler(be, bridge.HTTPOptions{Warnf: log.Sugar().Warnf, Name: "mcpd", LocalClock: true})
}

// faceHandler serves the dashboard's paths ("/" and /dashboard/, while
// it is on) and everything else with the MCP handler, so that /mcp,
// /servers/NAME/mcp and /profiles/NAME/mcp are unchanged.
type faceHandler struct {
	mcp  httpHandler
	dash *dashboard.Dashboard
}

func (f *faceHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.dash.Owns(r.URL.Path) {
		f.dash.ServeHTTP(w, r)
		return
	}
	f.mcp.ServeHTTP(w, r)
}

func (f *faceHandler) Close() {
	f.mcp.Close()
	f.dash.Close()
}

func (f *faceHandler) Reconfigure(ctx context.Context) { f.mcp.Reconfigure(ctx) }

// httpListen is the address setting of the HTTP face: --http-listen,
// else the config's "httpListen", else the default.
type httpListen struct {
	value     string // "off", or an address for httpface.ParseAddr
	explicit  bool   // from the flag or the config: failing to bind it is an error
	source    string // where value came from, for messages
	inherited bool   // serve the socket systemd passed, whose address value is
}

// resolveHTTPListen picks the setting: the flag wins over the config file.
func resolveHTTPListen(flagValue string, cfg *config.Config) httpListen {
	switch {
	case flagValue != "":
		return httpListen{value: flagValue, explicit: true, source: "--http-listen"}
	case cfg != nil && cfg.HTTPListen != "":
		return httpListen{value: cfg.HTTPListen, explicit: true, source: "httpListen"}
	}
	return httpListen{value: httpface.DefaultAddr, source: "default"}
}

// httpFace runs the HTTP face of the daemon and rebinds it when its
// setting changes on reload.
type httpFace struct {
	log     *zap.Logger
	srv     *core.Service
	be      *httpface.Backend
	handler httpHandler
	dash    *dashboard.Dashboard
	// inherited is the HTTP socket systemd passed (socket activation),
	// nil if none; the daemon closes it. inheritedAddr is its address as
	// httpface.ParseAddr renders it.
	inherited     *os.File
	inheritedAddr string

	// applyMu serialises apply and close, which bind, serve and close
	// faces (I/O, outside mu). Order: applyMu, then mu.
	applyMu sync.Mutex

	mu      sync.Mutex // guards setting, face and closed; held for no I/O
	setting httpListen
	face    *httpface.Face // nil when not serving
	closed  bool
}

// startHTTPFace starts the face for setting, with the dashboard on unless
// cfg (nil: none) turns it off, or on inherited, the HTTP
// socket systemd passed (nil: none), unless setting names another address
// (withInherited). An explicit address that is invalid or cannot be bound
// is an error, as is an inherited socket beyond loopback; the default one
// that cannot be bound (another user's mcpd has it) leaves mcpd without
// the face, with a warning and the reason in status.
func startHTTPFace(setting httpListen, inherited *os.File, srv *core.Service, cfg *config.Config, log *zap.Logger) (*httpFace, error) {
	be := httpface.NewBackend(srv)
	dash := dashboard.New(dashboard.Options{Server: srv, Backend: be, Logger: log.Named("dashboard")})
	dash.SetConfig(cfg)
	dash.SetEnabled(cfg.DashboardOn())
	h := &httpFace{log: log, srv: srv, be: be, dash: dash, handler: &faceHandler{mcp: newHTTPHandler(be, log), dash: dash}}
	if inherited != nil {
		ln, addr, err := httpface.Inherited(inherited)
		if err != nil {
			h.close()
			return nil, err
		}
		ln.Close() // a dup: listen makes another
		h.inherited, h.inheritedAddr = inherited, addr.String()
	}
	setting = h.withInherited(setting)
	if err := h.apply(setting); err != nil && setting.explicit {
		h.close()
		return nil, err
	}
	return h, nil
}

// withInherited is setting resolved against the socket systemd passed: it
// wins over the default address, and serves a setting that names its
// address (binding that address would fail: systemd holds it). A setting
// of another address, or off, wins over it (apply warns).
func (h *httpFace) withInherited(setting httpListen) httpListen {
	if h.inherited == nil {
		return setting
	}
	source := "systemd socket"
	if setting.explicit {
		a, err := httpface.ParseAddr(setting.value)
		if err != nil || a.String() != h.inheritedAddr {
			return setting
		}
		source = setting.source
	}
	return httpListen{value: h.inheritedAddr, explicit: true, source: source, inherited: true}
}

// apply serves setting, closing what served before; on failure the face is
// off with the reason in status, and the error returned.
func (h *httpFace) apply(setting httpListen) error {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	h.mu.Lock()
	closed, old := h.closed, h.face
	if !closed {
		h.setting, h.face = setting, nil
	}
	h.mu.Unlock()
	if closed {
		return nil
	}
	h.closeFace(old)
	if h.inherited != nil && !setting.inherited {
		h.log.Warn("HTTP face: the setting overrides the socket from systemd, whose connections are not served; change ListenStream= in mcpd.socket to match",
			zap.String("source", setting.source), zap.String("value", setting.value), zap.String("systemd_addr", h.inheritedAddr))
	}
	if setting.value == httpface.Off {
		h.log.Info("HTTP face off", zap.String("source", setting.source))
		h.srv.SetHTTPState(core.HTTPState{Listen: httpface.Off, OffReason: "disabled (" + setting.source + " off)"})
		return nil
	}
	face, err := h.listen(setting)
	if err != nil {
		h.srv.SetHTTPState(core.HTTPState{Listen: setting.value, OffReason: err.Error()})
		return err
	}
	h.mu.Lock()
	h.face = face
	h.mu.Unlock()
	h.srv.SetHTTPState(core.HTTPState{Listen: setting.value, BaseURL: face.URL()})
	h.log.Info("serving MCP hosts over HTTP", zap.String("url", face.URL()+"/mcp"), zap.String("addr", face.Addr().String()))
	if h.dash.Enabled() {
		h.log.Info("serving the dashboard", zap.String("url", face.URL()+"/"))
	}
	return nil
}

// listen binds setting, or takes the socket from systemd, and starts
// serving on it.
func (h *httpFace) listen(setting httpListen) (*httpface.Face, error) {
	if setting.inherited {
		ln, _, err := httpface.Inherited(h.inherited)
		if err != nil {
			return nil, err
		}
		return h.serve(ln), nil
	}
	addr, err := httpface.ParseAddr(setting.value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting.source, err)
	}
	ln, err := httpface.Listen(addr)
	if err != nil {
		if !setting.explicit && errors.Is(err, httpface.ErrAddrInUse) {
			h.log.Warn("HTTP face off: its default address is taken; set --http-listen or httpListen to another address, or off",
				zap.String("addr", addr.String()), zap.Error(err))
			return nil, fmt.Errorf("%w; set --http-listen or \"httpListen\" to another address", err)
		}
		return nil, err
	}
	return h.serve(ln), nil
}

// serve serves the handler on ln to this user only: every connection's
// peer uid is checked, an inherited socket's too (httpface.Face).
func (h *httpFace) serve(ln net.Listener) *httpface.Face {
	return httpface.Serve(ln, h.handler, httpface.Options{Logger: h.log, Server: h.srv, WantUID: -1})
}

// reload applies the config's "httpListen" when the flag does not set it
// and the setting changed; a failure is logged and reported in status,
// never fatal.
func (h *httpFace) reload(flagValue string, cfg *config.Config) {
	h.setDashboard(cfg)
	setting := h.withInherited(resolveHTTPListen(flagValue, cfg))
	h.mu.Lock()
	same := setting == h.setting
	h.mu.Unlock()
	if same {
		return
	}
	if err := h.apply(setting); err != nil {
		h.log.Error("HTTP face not serving after reload", zap.String("source", setting.source), zap.Error(err))
	}
}

// setDashboard applies the config's "dashboard" (on unless false) and
// gives the dashboard the config, for what status does not say.
func (h *httpFace) setDashboard(cfg *config.Config) {
	h.dash.SetConfig(cfg)
	if on := cfg.DashboardOn(); on != h.dash.Enabled() {
		h.dash.SetEnabled(on)
		h.log.Info("dashboard turned "+map[bool]string{true: "on", false: "off"}[on]+" by the config", zap.Bool("dashboard", on))
	}
}

// reconfigure applies a reloaded config's profiles to the handler's
// running sessions and shared bridges (bridge.HTTPHandler.Reconfigure).
func (h *httpFace) reconfigure(ctx context.Context) {
	h.handler.Reconfigure(ctx)
}

// close ends the face: the handler's sessions and streams, the listener
// and its connections, and the backend's streams, before the supervisor
// stops the children.
func (h *httpFace) close() {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	h.mu.Lock()
	h.closed = true
	face := h.face
	h.face = nil
	h.mu.Unlock()
	h.handler.Close()
	h.closeFace(face)
	h.be.Close()
}

// closeFace stops serving on face (nil: nothing to stop), logging an error.
func (h *httpFace) closeFace(face *httpface.Face) {
	if face == nil {
		return
	}
	if err := face.Close(); err != nil {
		h.log.Warn("HTTP face stopped with an error", zap.Error(err))
	}
}
