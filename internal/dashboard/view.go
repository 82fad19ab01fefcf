package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// The JSON the page renders. Each field is chosen here, never copied
// wholesale from status or the config, so that no environment or header
// value can reach the page.

// snapshot is the whole page's state at one moment.
type snapshot struct {
	TimeUnixMs  int64         `json:"timeUnixMs"`
	Version     string        `json:"version"`
	Pid         int64         `json:"pid"`
	UptimeMs    int64         `json:"uptimeMs"`
	ConfigPath  string        `json:"configPath"`
	ConfigError string        `json:"configError,omitempty"`
	AuditOn     bool          `json:"auditOn"`
	HTTP        httpView      `json:"http"`
	Sharing     sharingView   `json:"sharing"`
	Servers     []serverView  `json:"servers"`
	Apps        []appView     `json:"apps"`
	Profiles    []profileView `json:"profiles,omitempty"`
}

type httpView struct {
	Listen    string   `json:"listen"`
	URLs      []string `json:"urls"`
	OffReason string   `json:"offReason,omitempty"`
}

type sharingView struct {
	Apps                 int32 `json:"apps"`
	Hosts                int32 `json:"hosts"`
	Processes            int32 `json:"processes"`
	RemoteServers        int32 `json:"remoteServers"`
	RSSBytes             int64 `json:"rssBytes"`
	PSSBytes             int64 `json:"pssBytes"`
	ProcessesWithoutMcpd int32 `json:"processesWithoutMcpd"`
	RSSBytesWithoutMcpd  int64 `json:"rssBytesWithoutMcpd"`
	PSSBytesWithoutMcpd  int64 `json:"pssBytesWithoutMcpd"`
}

type profileView struct {
	Name    string   `json:"name"`
	Servers []string `json:"servers"`
}

type memView struct {
	Procs    int   `json:"procs"`
	RSSBytes int64 `json:"rssBytes"`
	PSSBytes int64 `json:"pssBytes,omitempty"`
}

type serverView struct {
	Name string `json:"name"`
	// State is the lifecycle state; "withheld" when ready but with tool
	// changes withheld under pin "enforce".
	State           string `json:"state"`
	Reason          string `json:"reason,omitempty"`
	NextRestartInMs int64  `json:"nextRestartInMs,omitempty"`
	Era             string `json:"era,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Transport is "stdio" or "remote".
	Transport string `json:"transport"`
	// Command is the command line, or a remote server's URL without its
	// query and credentials, with any env or header value masked.
	Command            string           `json:"command"`
	EnvKeys            []string         `json:"envKeys,omitempty"`
	HeaderNames        []string         `json:"headerNames,omitempty"`
	Cwd                string           `json:"cwd,omitempty"`
	Pid                int64            `json:"pid,omitempty"`
	StartedAtUnixMs    int64            `json:"startedAtUnixMs,omitempty"`
	UptimeMs           int64            `json:"uptimeMs,omitempty"`
	Restarts           int64            `json:"restarts"`
	Memory             *memView         `json:"memory,omitempty"`
	CallsTotal         int64            `json:"callsTotal"`
	CallsFailed        int64            `json:"callsFailed"`
	CallsInFlight      int64            `json:"callsInFlight"`
	CacheHits          int64            `json:"cacheHits"`
	CacheMisses        int64            `json:"cacheMisses"`
	CacheCoalesced     int64            `json:"cacheCoalesced"`
	CachePolicy        string           `json:"cachePolicy,omitempty"`
	Share              string           `json:"share,omitempty"`
	Instances          []instanceView   `json:"instances,omitempty"`
	Autostart          bool             `json:"autostart,omitempty"`
	Disabled           bool             `json:"disabled,omitempty"`
	ExplicitlyStopped  bool             `json:"explicitlyStopped,omitempty"`
	PinMode            string           `json:"pinMode"`
	ToolChangesPending int64            `json:"toolChangesPending,omitempty"`
	LoginRequired      bool             `json:"loginRequired,omitempty"`
	LoggedIn           bool             `json:"loggedIn,omitempty"`
	LastError          string           `json:"lastError,omitempty"`
	LastExit           string           `json:"lastExit,omitempty"`
	Sandbox            string           `json:"sandbox,omitempty"`
	ServerInfo         *json.RawMessage `json:"serverInfo,omitempty"`

	// CanLogin is set for a remote server whose authorization is mcpd's
	// OAuth login: it needs one, logged in before, or has an "oauth"
	// block. LoginInProgress while a login awaits its redirect;
	// LoginError is why the last login begun from the page failed.
	CanLogin        bool   `json:"canLogin,omitempty"`
	LoginInProgress bool   `json:"loginInProgress,omitempty"`
	LoginError      string `json:"loginError,omitempty"`
	OAuthIssuer     string `json:"oauthIssuer,omitempty"`
}

type instanceView struct {
	Key      string   `json:"key"`
	State    string   `json:"state"`
	Pid      int64    `json:"pid,omitempty"`
	UptimeMs int64    `json:"uptimeMs,omitempty"`
	Restarts int64    `json:"restarts"`
	Memory   *memView `json:"memory,omitempty"`
}

type appView struct {
	Name          string   `json:"name"`
	Version       string   `json:"version,omitempty"`
	Pid           int      `json:"pid,omitempty"`
	Door          string   `json:"door"`
	Profile       string   `json:"profile,omitempty"`
	Used          []string `json:"used"`
	Host          bool     `json:"host"`
	ConnectedAtMs int64    `json:"connectedAtUnixMs"`
	Self          bool     `json:"self,omitempty"`
}

// doors names the transports as the page shows them.
var doors = map[string]string{
	core.TransportGRPC:      "gRPC socket",
	core.TransportHTTP:      "HTTP face",
	core.TransportRelay:     "mcpdctl bridge",
	core.TransportDashboard: "dashboard",
}

// secretMask hides the values of a server's env and headers in text.
func secretMask(s *config.Server) *strings.Replacer {
	if s == nil {
		return strings.NewReplacer()
	}
	var pairs []string
	add := func(v string) {
		if len(v) >= 3 {
			pairs = append(pairs, v, "•••")
		}
	}
	for _, v := range s.Env {
		add(v)
	}
	if s.Remote != nil {
		for _, v := range s.Remote.Headers {
			add(v)
		}
		if s.Remote.OAuth != nil {
			add(s.Remote.OAuth.ClientSecret)
		}
	}
	// Longest first, so that a value containing another is masked whole.
	for i := 0; i < len(pairs); i += 2 {
		for j := i + 2; j < len(pairs); j += 2 {
			if len(pairs[j]) > len(pairs[i]) {
				pairs[i], pairs[j] = pairs[j], pairs[i]
				pairs[i+1], pairs[j+1] = pairs[j+1], pairs[i+1]
			}
		}
	}
	return strings.NewReplacer(pairs...)
}

// configOf returns the config of server name, nil when unknown.
func (d *Dashboard) configOf(name string) *config.Server {
	c := d.cfg.Load()
	if c == nil {
		return nil
	}
	for i := range c.Servers {
		if c.Servers[i].Name == name {
			return &c.Servers[i]
		}
	}
	return nil
}

// mask hides server name's secret values in text.
func (d *Dashboard) mask(name, text string) string {
	return secretMask(d.configOf(name)).Replace(text)
}

// status is the daemon's status, as the dashboard's app asks for it.
func (d *Dashboard) status(ctx context.Context) (service.Status, error) {
	a, err := d.localApp()
	if err != nil {
		return service.Status{}, err
	}
	return a.Status(ctx)
}

// build makes the snapshot of the daemon now.
func (d *Dashboard) build(ctx context.Context) (*snapshot, error) {
	st, err := d.status(ctx)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, s := range st.Servers {
		if s.Pid > 0 {
			pids = append(pids, s.Pid)
		}
		for _, in := range s.Instances {
			if in.Pid > 0 {
				pids = append(pids, in.Pid)
			}
		}
	}
	mem := procs.TreeMemory(pids)
	memOf := func(pid int) *memView {
		m, ok := mem[pid]
		if pid <= 0 || !ok || m.Procs == 0 {
			return nil
		}
		v := &memView{Procs: m.Procs, RSSBytes: m.RSS}
		if m.PSSKnown {
			v.PSSBytes = m.PSS
		}
		return v
	}
	sh := st.Sharing
	out := &snapshot{
		TimeUnixMs: time.Now().UnixMilli(), Version: st.Version, Pid: int64(st.Pid), UptimeMs: st.Uptime.Milliseconds(),
		ConfigPath: st.ConfigPath, ConfigError: st.ConfigError, AuditOn: st.AuditPath != "",
		HTTP: httpView{Listen: st.HTTP.Listen, URLs: st.HTTP.URLs, OffReason: st.HTTP.OffReason},
		Sharing: sharingView{Apps: int32(sh.Apps), Hosts: int32(sh.Hosts), Processes: int32(sh.Processes), RemoteServers: int32(sh.RemoteServers),
			RSSBytes: sh.RSSBytes, PSSBytes: sh.PSSBytes, ProcessesWithoutMcpd: int32(sh.ProcessesWithoutMcpd),
			RSSBytesWithoutMcpd: sh.RSSBytesWithoutMcpd, PSSBytesWithoutMcpd: sh.PSSBytesWithoutMcpd},
		Servers: []serverView{}, Apps: []appView{},
	}
	for _, p := range st.Profiles {
		out.Profiles = append(out.Profiles, profileView{Name: p.Name, Servers: p.Servers})
	}
	for _, s := range st.Servers {
		out.Servers = append(out.Servers, d.serverView(s, memOf))
	}
	for _, a := range d.srv.Apps() {
		door := doors[a.Transport]
		if door == "" {
			door = a.Transport
		}
		used := a.Used
		if used == nil {
			used = []string{}
		}
		out.Apps = append(out.Apps, appView{Name: a.Name, Version: a.Version, Pid: a.Pid, Door: door, Profile: a.Profile,
			Used: used, Host: a.Host, ConnectedAtMs: a.ConnectedAt.UnixMilli(), Self: a.Transport == core.TransportDashboard})
	}
	return out, nil
}

// serverView renders one server's status, with its reason in words.
func (d *Dashboard) serverView(s service.ServerStatus, memOf func(int) *memView) serverView {
	cfg := d.configOf(s.Name)
	mask := secretMask(cfg)
	v := serverView{
		Name: s.Name, State: string(s.State), NextRestartInMs: s.NextRestartIn.Milliseconds(),
		Era: s.Era, ProtocolVersion: s.ProtocolVersion, Transport: "stdio",
		Command: mask.Replace(s.Command), Pid: int64(s.Pid), UptimeMs: s.Uptime.Milliseconds(), Restarts: int64(s.Restarts), Memory: memOf(s.Pid),
		CallsTotal: s.CallsTotal, CallsFailed: s.CallsFailed, CallsInFlight: s.CallsInFlight,
		CacheHits: s.Cache.Hits, CacheMisses: s.Cache.Misses, CacheCoalesced: s.Cache.Coalesced,
		CachePolicy: s.Cache.Policy, Share: s.Share, Autostart: s.Autostart, Disabled: s.Disabled,
		ExplicitlyStopped: s.ExplicitlyStopped, ToolChangesPending: int64(s.ToolChangesPending),
		LastError: mask.Replace(s.LastError), LastExit: s.LastExit, Sandbox: s.Sandbox,
		PinMode: string(pin.DefaultMode),
	}
	if !s.StartedAt.IsZero() {
		v.StartedAtUnixMs = s.StartedAt.UnixMilli()
	}
	if info := s.ServerInfo; len(info) > 0 && json.Valid(info) {
		raw := json.RawMessage(mask.Replace(string(info)))
		if json.Valid(raw) {
			v.ServerInfo = &raw
		}
	}
	d.configView(&v, cfg)
	if o := s.OAuth; o != nil {
		v.Transport = "remote"
		v.LoginRequired, v.LoggedIn, v.LoginInProgress = o.LoginRequired, o.LoggedIn, o.LoginInProgress
		v.OAuthIssuer = o.Issuer
		v.CanLogin = v.LoginRequired || v.OAuthIssuer != "" || (cfg != nil && cfg.Remote != nil && cfg.Remote.OAuth != nil)
		v.LoginError = d.loginError(s.Name)
	}
	for _, in := range s.Instances {
		v.Instances = append(v.Instances, instanceView{Key: in.Instance, State: string(in.State), Pid: int64(in.Pid),
			UptimeMs: in.Uptime.Milliseconds(), Restarts: int64(in.Restarts), Memory: memOf(in.Pid)})
	}
	if v.State == "ready" && v.ToolChangesPending > 0 && v.PinMode == string(pin.ModeEnforce) {
		v.State = "withheld"
	}
	v.Reason = reason(s, v)
	return v
}

// configView fills in what v shows of the server's config: its pin mode,
// transport, env keys, header names and working directory.
func (d *Dashboard) configView(v *serverView, cfg *config.Server) {
	if cfg == nil {
		return
	}
	if cfg.Pin != "" {
		v.PinMode = cfg.Pin
	}
	if cfg.Remote != nil {
		v.Transport = "remote"
		for k := range cfg.Remote.Headers {
			v.HeaderNames = append(v.HeaderNames, k)
		}
		slices.Sort(v.HeaderNames)
		return
	}
	for k := range cfg.Env {
		v.EnvKeys = append(v.EnvKeys, k)
	}
	slices.Sort(v.EnvKeys)
	v.Cwd = cfg.Cwd
}

// reason says in words why a server is in its state.
func reason(s service.ServerStatus, v serverView) string {
	last := v.LastError
	if last == "" {
		last = v.LastExit
	}
	switch v.State {
	case "backoff":
		return "restarting after: " + orUnknown(last)
	case "crashloop":
		return "crash loop: too many exits in a short time; cooling down (restart to retry now). Last: " + orUnknown(last)
	case "login required":
		r := ""
		if s.OAuth != nil {
			r = s.OAuth.Reason
		}
		if r == "" {
			r = "the server needs a login"
		}
		return r + "; log in from the server's panel, or run: mcpdctl login " + s.Name
	case "failed":
		if s.ConfigError != "" {
			return "config: " + v.LastError
		}
		return orUnknown(last)
	case "withheld":
		return "tool definitions changed since approved; review and approve them below"
	case "stopped":
		switch {
		case v.Disabled:
			return "disabled in the config"
		case v.ExplicitlyStopped:
			return "stopped by the operator"
		case v.Autostart:
			return last
		}
		return "starts on first use"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// serveStatus answers the snapshot.
func (d *Dashboard) serveStatus(w http.ResponseWriter, r *http.Request) {
	snap, err := d.build(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, snap)
}
