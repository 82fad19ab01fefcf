package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// Bounds of what one panel shows.
const (
	defaultLogLines = 200
	maxLogLines     = 2000
	auditRecords    = 50
	// auditTail is how much of the end of the audit file is read for a
	// server's recent records.
	auditTail = 1 << 20
	// callTimeout bounds a tool call made from the page.
	callTimeout = 2 * time.Minute
)

// serveTools answers the server's tools, with their schemas, as the
// service lists them (starting the server if it is lazy).
func (d *Dashboard) serveTools(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, err := d.localApp()
	if err != nil {
		writeError(w, err)
		return
	}
	lists, err := a.List(r.Context(), name, "tools/list", service.Options{})
	if err != nil {
		writeError(w, err)
		return
	}
	out := struct {
		Tools       json.RawMessage `json:"tools"`
		Error       string          `json:"error,omitempty"`
		Unavailable string          `json:"unavailable,omitempty"`
	}{Tools: json.RawMessage("[]")}
	for _, l := range lists {
		if l.Server != name {
			continue
		}
		if len(l.Items) > 0 && json.Valid(l.Items) {
			out.Tools = l.Items
		}
		if l.Error != nil {
			out.Error = l.Error.Message
		}
		out.Unavailable = d.mask(name, l.Unavailable)
	}
	writeJSON(w, out)
}

// servePins answers the server's pin mode and its changed tool
// definitions, each pinned and current, for the page's diff.
func (d *Dashboard) servePins(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, err := d.localApp()
	if err != nil {
		writeError(w, err)
		return
	}
	tc, err := a.ToolChanges(r.Context(), name, service.Options{})
	if err != nil {
		writeError(w, err)
		return
	}
	type change struct {
		Tool    string          `json:"tool"`
		Kind    string          `json:"kind"`
		Members []string        `json:"members,omitempty"`
		Pinned  json.RawMessage `json:"pinned,omitempty"`
		Current json.RawMessage `json:"current,omitempty"`
	}
	out := struct {
		Mode    string   `json:"mode"`
		Changes []change `json:"changes"`
	}{Mode: tc.PinMode, Changes: []change{}}
	raw := func(s json.RawMessage) json.RawMessage {
		if len(s) == 0 || !json.Valid(s) {
			return nil
		}
		return s
	}
	for _, c := range tc.Changes {
		out.Changes = append(out.Changes, change{Tool: c.Tool, Kind: c.Kind, Members: c.Members,
			Pinned: raw(c.Pinned), Current: raw(c.Current)})
	}
	writeJSON(w, out)
}

// logLine is one stderr line as the page shows it.
type logLine struct {
	TimeUnixMs int64  `json:"timeUnixMs"`
	Text       string `json:"text"`
	Pid        int64  `json:"pid,omitempty"`
}

// serveLogs answers the server's last stderr lines (?n=, default 200).
func (d *Dashboard) serveLogs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	n := defaultLogLines
	if v, err := strconv.Atoi(r.URL.Query().Get("n")); err == nil && v > 0 {
		n = min(v, maxLogLines)
	}
	a, err := d.localApp()
	if err != nil {
		writeError(w, err)
		return
	}
	got, err := a.Logs(r.Context(), name, n)
	if err != nil {
		writeError(w, err)
		return
	}
	lines := []logLine{}
	for _, l := range got {
		lines = append(lines, logLine{TimeUnixMs: l.Time.UnixMilli(), Text: d.mask(name, l.Text), Pid: int64(l.Pid)})
	}
	writeJSON(w, map[string]any{"lines": lines})
}

// serveFollow streams the server's new stderr lines as server-sent
// events ("line"), after none of the backlog (serveLogs gives that),
// until the page goes away.
func (d *Dashboard) serveFollow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx, err := d.callerContext(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	var (
		sse  *sseWriter // set once the log is followed
		dead bool       // the page's event stream could not start
	)
	err = d.be.FollowLogs(ctx, service.LogFollow{Server: name}, func() {
		var ok bool
		sse, ok = startSSE(w)
		dead = !ok
	}, func(l service.LogLine) error {
		if dead {
			return errNoStream
		}
		return sse.send("line", logLine{TimeUnixMs: l.Time.UnixMilli(), Text: d.mask(name, l.Text), Pid: int64(l.Pid)})
	})
	switch {
	case err == nil || dead || ctx.Err() != nil:
	case sse == nil:
		writeError(w, err)
	default:
		d.log.Debug("dashboard log follow ended", zap.String("server", name), zap.Error(err))
		_ = sse.send("end", map[string]string{"error": d.mask(name, err.Error())})
	}
}

// errNoStream ends a log follow whose page's event stream could not start.
var errNoStream = errors.New("no event stream")

// auditView is one audit record as the page shows it: never the
// arguments themselves, only their digest.
type auditView struct {
	TimeUnixMs int64  `json:"timeUnixMs"`
	App        string `json:"app"`
	Front      string `json:"front"`
	Method     string `json:"method"`
	Name       string `json:"name,omitempty"`
	ArgsDigest string `json:"argsDigest,omitempty"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	DurationUs int64  `json:"durationUs"`
	Cache      string `json:"cache,omitempty"`
}

// serveAudit answers the server's most recent audit records, newest
// first, read from the end of the audit log; "on" is false when the log
// is off.
func (d *Dashboard) serveAudit(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	st, err := d.status(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	path := st.AuditPath
	recs := []auditView{}
	if path != "" {
		recs = readAuditTail(path, name, auditRecords)
		for i := range recs {
			recs[i].Error = d.mask(name, recs[i].Error)
		}
	}
	writeJSON(w, map[string]any{"on": path != "", "records": recs})
}

// readAuditTail returns the last n records of server in the audit file at
// path, newest first, reading at most its last auditTail bytes.
func readAuditTail(path, server string, n int) []auditView {
	out := []auditView{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > auditTail {
		f.Seek(fi.Size()-auditTail, io.SeekStart)
		skipLine(f)
	}
	audit.ReadFrom(f, func(rec *audit.Record, _ []byte) error {
		if rec.Server != server {
			return nil
		}
		out = append(out, auditView{TimeUnixMs: rec.Time.UnixMilli(), App: rec.App, Front: rec.Front, Method: rec.Method, Name: rec.Name,
			ArgsDigest: rec.ArgsDigest, Outcome: rec.Outcome, Error: rec.Error, DurationUs: rec.DurationUs, Cache: rec.Cache})
		if len(out) > n {
			out = out[1:]
		}
		return nil
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// skipLine reads r past the next newline (a line cut by a seek).
func skipLine(r io.Reader) {
	var b [1]byte
	for {
		if n, err := r.Read(b[:]); n == 0 || err != nil || b[0] == '\n' {
			return
		}
	}
}

// serveAction runs a state-changing request: start, stop, restart, call
// (a tool), approve (changed tool definitions) or login (a remote
// server's OAuth login, login.go). It needs the page's
// token, of the request's own session.
func (d *Dashboard) serveAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	if !d.tokenValid(r) {
		d.log.Warn("dashboard request refused: missing or foreign token", zap.String("path", r.URL.Path), zap.String("remote_addr", r.RemoteAddr))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]string{"error": "Forbidden: the page's token is missing or not this session's; reload the page"})
		return
	}
	ctx := r.Context()
	a, err := d.localApp()
	if err != nil {
		writeError(w, err)
		return
	}
	switch action {
	case "start", "stop", "restart":
		switch action {
		case "start":
			_, err = a.StartServer(ctx, name)
		case "stop":
			_, err = a.StopServer(ctx, name)
		default:
			_, err = a.RestartServer(ctx, name)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		d.log.Info("dashboard: server "+action, zap.String("server", name))
		writeJSON(w, map[string]bool{"ok": true})
	case "call":
		var in struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := readBody(r, &in); err != nil || in.Tool == "" {
			http.Error(w, "want {\"tool\": NAME, \"arguments\": {...}}", http.StatusBadRequest)
			return
		}
		d.serveCall(ctx, w, a, name, in.Tool, in.Arguments)
	case "approve":
		var in struct {
			Tools []string `json:"tools"`
		}
		if err := readBody(r, &in); err != nil {
			http.Error(w, "want {\"tools\": [NAME...]} (none: every changed tool)", http.StatusBadRequest)
			return
		}
		approved, err := a.ApproveTools(ctx, name, in.Tools, service.Options{})
		if err != nil {
			writeError(w, err)
			return
		}
		d.log.Info("dashboard: tools approved", zap.String("server", name), zap.Strings("tools", approved))
		writeJSON(w, map[string]any{"approved": approved})
	case "login":
		d.serveLogin(w, r, name)
	default:
		http.NotFound(w, r)
	}
}

// serveCall calls tool of server with args (a JSON object; empty or null:
// none) as the dashboard's app, and answers its result or its server's
// JSON-RPC error, with how long it took.
func (d *Dashboard) serveCall(ctx context.Context, w http.ResponseWriter, a *core.App, server, tool string, args json.RawMessage) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	params, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{tool, args})
	if err != nil {
		http.Error(w, "arguments: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := a.SendRequest(ctx, service.Request{Server: server, Method: "tools/call", Params: params,
		Options: service.Options{Timeout: callTimeout, Client: service.Client{Name: AppName}}}, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{"durationUs": resp.Duration.Microseconds()}
	if len(resp.Result) > 0 && json.Valid(resp.Result) {
		out["result"] = resp.Result
	}
	if e := resp.Error; e != nil {
		out["error"] = map[string]any{"code": e.Code, "message": e.Message}
	}
	writeJSON(w, out)
}
