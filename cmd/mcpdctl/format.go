package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// stateName is the stable lower-case word for a server state, as
// docs/operations.md names the states.
func stateName(s mcpdv1.ServerState) string {
	switch s {
	case mcpdv1.ServerState_SERVER_STATE_STOPPED:
		return "stopped"
	case mcpdv1.ServerState_SERVER_STATE_STARTING:
		return "starting"
	case mcpdv1.ServerState_SERVER_STATE_READY:
		return "ready"
	case mcpdv1.ServerState_SERVER_STATE_BACKOFF:
		return "backoff"
	case mcpdv1.ServerState_SERVER_STATE_CRASHLOOP:
		return "crashloop"
	case mcpdv1.ServerState_SERVER_STATE_STOPPING:
		return "stopping"
	case mcpdv1.ServerState_SERVER_STATE_FAILED:
		return "failed"
	case mcpdv1.ServerState_SERVER_STATE_LOGIN_REQUIRED:
		return "login required"
	case mcpdv1.ServerState_SERVER_STATE_UNSPECIFIED:
		return "unknown"
	}
	return fmt.Sprintf("unknown(%d)", int32(s))
}

// formatDuration prints ms the short way operators read uptimes: 42s, 5m3s,
// 2h7m, 3d4h.
func formatDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < 0:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int64(d/time.Minute), int64(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int64(d/(24*time.Hour)), int64(d%(24*time.Hour)/time.Hour))
}

// oneLine returns the first line of s, trimmed, cut to max runes and
// sanitized.
func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-3]) + "..."
	}
	return sanitize(s)
}

// dash prints a table cell: "-" when empty, else s sanitized.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return sanitize(s)
}

// protocolCell is the era and the protocol version the child chose.
func protocolCell(s *mcpdv1.ServerStatus) string {
	switch {
	case s.GetEra() == "":
		return "-"
	case s.GetProtocolVersion() == "":
		return sanitize(s.GetEra())
	}
	return sanitize(s.GetEra() + "/" + s.GetProtocolVersion())
}

func pidCell(pid int64) string {
	if pid == 0 {
		return "-"
	}
	return fmt.Sprint(pid)
}

func uptimeCell(s *mcpdv1.ServerStatus) string {
	if s.GetStartedAtUnixMs() == 0 { // not running (a remote server has no pid, but an uptime)
		return "-"
	}
	return formatDuration(s.GetUptimeMs())
}

// lastErrorCell is the last error, else the last exit unless it was a clean
// one (a stopped or restarted server exits 0: that is no error), on one line.
func lastErrorCell(s *mcpdv1.ServerStatus) string {
	msg := s.GetLastError()
	exit := s.GetLastExit()
	// A clean exit (a stop, or an idle stop: "idle timeout (exit status 0)")
	// is no error.
	if msg == "" && exit != "" && exit != "exit status 0" && !strings.HasSuffix(exit, "(exit status 0)") {
		msg = "exited: " + exit
	}
	// "...; last stderr lines:" then one line each (the supervisor's
	// stderrLines): the cell shows the first.
	if head, lines, ok := strings.Cut(msg, "; last stderr lines:\n"); ok {
		msg = head + ": " + strings.TrimSpace(lines)
	}
	if msg != "" && s.GetState() == mcpdv1.ServerState_SERVER_STATE_READY {
		// The process serving now has not failed: the error was its
		// predecessor's.
		msg = "previous process: " + msg
	}
	return oneLine(msg, 80)
}

// sortedServers returns the servers by name.
func sortedServers(in []*mcpdv1.ServerStatus) []*mcpdv1.ServerStatus {
	out := append([]*mcpdv1.ServerStatus(nil), in...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// serverJSON is the stable JSON shape of one server in --json output.
type serverJSON struct {
	Name              string          `json:"name"`
	State             string          `json:"state"`
	Pid               int64           `json:"pid"`
	StartedAtUnixMs   int64           `json:"started_at_unix_ms"`
	UptimeMs          int64           `json:"uptime_ms"`
	Restarts          int64           `json:"restarts"`
	Era               string          `json:"era"`
	ProtocolVersion   string          `json:"protocol_version"`
	ServerInfo        json.RawMessage `json:"server_info"`
	LastError         string          `json:"last_error"`
	ConfigError       string          `json:"config_error"`
	LastExit          string          `json:"last_exit"`
	LastStderrLine    string          `json:"last_stderr_line"`
	Autostart         bool            `json:"autostart"`
	Disabled          bool            `json:"disabled"`
	ExplicitlyStopped bool            `json:"explicitly_stopped"`
	NextRestartInMs   int64           `json:"next_restart_in_ms"`
	CallsInFlight     int64           `json:"calls_in_flight"`
	CallsTotal        int64           `json:"calls_total"`
	CallsFailed       int64           `json:"calls_failed"`
	LinesSkipped      int64           `json:"lines_skipped"`
	LinesOversize     int64           `json:"lines_oversize"`
	ResponsesDropped  int64           `json:"responses_dropped"`
	MessagesInvalid   int64           `json:"messages_invalid"`
	Capabilities      json.RawMessage `json:"capabilities"`
	Command           string          `json:"command"`
	// Sandbox says how the server is confined; absent without a sandbox.
	Sandbox string `json:"sandbox,omitempty"`
	// Set by "status --json" only (status_ops.go): the Subscribe streams
	// watching the server, their apps and the events they lost.
	Subscriptions          *int     `json:"subscriptions,omitempty"`
	SubscribedApps         []string `json:"subscribed_apps,omitempty"`
	NotificationsDropped   *uint64  `json:"notifications_dropped,omitempty"`
	NotificationsCoalesced *uint64  `json:"notifications_coalesced,omitempty"`
	// ToolChangesPending counts the tool definitions that differ from
	// their pins and wait for "mcpdctl tools approve" (toolswatch.go).
	ToolChangesPending *int64 `json:"tool_changes_pending,omitempty"`
	// Cache is the server's result cache (cache.go); absent before its
	// first use.
	Cache *cacheJSON `json:"cache,omitempty"`
	// Share, MaxInstances and Instances are a shared server's (one child
	// per app or per workspace root); Instance and Root an instance's.
	Share        string       `json:"share,omitempty"`
	MaxInstances int64        `json:"max_instances,omitempty"`
	Instance     string       `json:"instance,omitempty"`
	Root         string       `json:"root,omitempty"`
	Instances    []serverJSON `json:"instances,omitempty"`
}

func toServerJSON(s *mcpdv1.ServerStatus) serverJSON {
	return serverJSON{
		Name:              s.GetName(),
		State:             stateName(s.GetState()),
		Pid:               s.GetPid(),
		StartedAtUnixMs:   s.GetStartedAtUnixMs(),
		UptimeMs:          s.GetUptimeMs(),
		Restarts:          s.GetRestarts(),
		Era:               s.GetEra(),
		ProtocolVersion:   s.GetProtocolVersion(),
		ServerInfo:        rawOrNull(s.GetServerInfoJson()),
		LastError:         s.GetLastError(),
		ConfigError:       s.GetConfigError(),
		LastExit:          s.GetLastExit(),
		LastStderrLine:    s.GetLastStderrLine(),
		Autostart:         s.GetAutostart(),
		Disabled:          s.GetDisabled(),
		ExplicitlyStopped: s.GetExplicitlyStopped(),
		NextRestartInMs:   s.GetNextRestartInMs(),
		CallsInFlight:     s.GetCallsInFlight(),
		CallsTotal:        s.GetCallsTotal(),
		CallsFailed:       s.GetCallsFailed(),
		LinesSkipped:      s.GetLinesSkipped(),
		LinesOversize:     s.GetLinesOversize(),
		ResponsesDropped:  s.GetResponsesDropped(),
		MessagesInvalid:   s.GetMessagesInvalid(),
		Capabilities:      rawOrNull(s.GetCapabilitiesJson()),
		Command:           s.GetCommand(),
		Sandbox:           s.GetSandbox(),
		Cache:             toCacheJSON(s),
		Share:             s.GetShare(),
		MaxInstances:      s.GetMaxInstances(),
		Instance:          s.GetInstance(),
		Root:              s.GetRoot(),
		Instances:         toInstancesJSON(s.GetInstances()),
	}
}

// toInstancesJSON is the JSON of a shared server's instances, in order.
func toInstancesJSON(in []*mcpdv1.ServerStatus) []serverJSON {
	var out []serverJSON
	for _, s := range in {
		out = append(out, toServerJSON(s))
	}
	return out
}

func toServersJSON(in []*mcpdv1.ServerStatus) []serverJSON {
	out := make([]serverJSON, 0, len(in))
	for _, s := range sortedServers(in) {
		out = append(out, toServerJSON(s))
	}
	return out
}

// rawOrNull passes JSON text through, and turns empty or invalid text into null.
func rawOrNull(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

// writeJSON prints v as indented JSON with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRawJSON prints JSON text as mcpd passed it, with a final newline.
func writeRawJSON(w io.Writer, s string) error {
	s = strings.TrimRight(s, " \t\r\n")
	_, err := io.WriteString(w, s+"\n")
	return err
}

// withServer returns the JSON object item with a "server" member added in
// front; every other member is kept byte for byte.
func withServer(item json.RawMessage, server string) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(item, &members); err != nil {
		return nil, fmt.Errorf("item is not a JSON object: %w", err)
	}
	if members == nil {
		return nil, fmt.Errorf("item is null, not a JSON object")
	}
	name, err := marshalNoEscape(server)
	if err != nil {
		return nil, err
	}
	if _, clash := members["server"]; clash {
		// The item has its own "server" member: ours replaces it
		// (a JSON object must not repeat a name).
		members["server"] = name
		return json.Marshal(members)
	}
	body := bytes.TrimSpace(item)
	var b bytes.Buffer
	b.WriteString(`{"server":`)
	b.Write(name)
	inner := bytes.TrimSpace(body[1 : len(body)-1])
	if len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// base64Size is the number of bytes that standard base64 text decodes to.
func base64Size(s string) int {
	s = strings.TrimRight(strings.Join(strings.Fields(s), ""), "=")
	return len(s) * 6 / 8
}

// contentBlock holds the members of an MCP ContentBlock that mcpdctl prints.
type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"resource"`
}

// renderContent returns a content block as text: text as is, anything
// else summarized on one line.
func renderContent(raw json.RawMessage) string {
	var b contentBlock
	if err := json.Unmarshal(raw, &b); err != nil {
		return "<invalid content>"
	}
	switch b.Type {
	case "text":
		return b.Text // printText sanitizes
	case "image", "audio":
		return fmt.Sprintf("<%s %s %d bytes>", b.Type, dash(b.MimeType), base64Size(b.Data))
	case "resource_link":
		return fmt.Sprintf("<resource_link %s>", b.URI)
	case "resource":
		if b.Resource == nil {
			return "<resource>"
		}
		if b.Resource.Text != nil {
			return *b.Resource.Text
		}
		if b.Resource.Blob != nil {
			return blobSummary(b.Resource.MimeType, *b.Resource.Blob)
		}
		return fmt.Sprintf("<resource %s>", b.Resource.URI)
	case "":
		return "<content without type>"
	}
	return fmt.Sprintf("<%s content>", b.Type)
}

// blobSummary is how mcpdctl shows binary contents: <blob mime N bytes>.
func blobSummary(mime, data string) string {
	if mime == "" {
		return fmt.Sprintf("<blob %d bytes>", base64Size(data))
	}
	return fmt.Sprintf("<blob %s %d bytes>", mime, base64Size(data))
}

// printText prints s, sanitized, and ends it with a newline if it has none.
func printText(w io.Writer, s string) {
	s = sanitizeText(s)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(w, s)
}

// mcpError formats a JSON-RPC error from a child server, once: what names
// the request (`tool "y"`), empty for none.
func mcpError(server, what string, e *mcpdv1.McpError) error {
	if what != "" {
		what += ": "
	}
	return fmt.Errorf("server %q: %sMCP error %d: %s", server, what, e.GetCode(), e.GetMessage())
}

// parseKeyValues builds a JSON object from key=value arguments. With
// jsonValues, a value that parses as JSON is taken as JSON (5, true,
// {"a":1}) and anything else as a string; without, every value is a string.
func parseKeyValues(args []string, jsonValues bool) (string, error) {
	return buildKeyValues(args, func(_, v string) ([]byte, error) {
		if jsonValues && json.Valid([]byte(v)) {
			var b bytes.Buffer
			err := json.Compact(&b, []byte(v))
			return b.Bytes(), err
		}
		return marshalNoEscape(v)
	})
}

// buildKeyValues builds a JSON object from key=value arguments, each value
// written as value makes it; a key given twice is an error.
func buildKeyValues(args []string, value func(key, v string) ([]byte, error)) (string, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := make(map[string]bool)
	for i, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return "", fmt.Errorf("argument %q is not key=value", a)
		}
		if seen[k] {
			return "", fmt.Errorf("argument %q given twice", k)
		}
		seen[k] = true
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := marshalNoEscape(k)
		if err != nil {
			return "", err
		}
		b.Write(key)
		b.WriteByte(':')
		val, err := value(k, v)
		if err != nil {
			return "", err
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// resultType reads the resultType of a result. "A client must treat an
// unrecognized resultType as invalid, and an absent one as "complete"."
func resultType(raw []byte) (string, error) {
	var r struct {
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field == "" {
			return "", fmt.Errorf("result is %s, not a JSON object", jsonValue(te.Value))
		}
		return "", fmt.Errorf("result is not a JSON object: %s", jsonShape(err))
	}
	switch r.ResultType {
	case "", "complete":
		return "complete", nil
	case "input_required":
		return r.ResultType, nil
	}
	return "", fmt.Errorf("result has unrecognized resultType %q", r.ResultType)
}

// inputRequired is the error for an input_required result: mcpdctl cannot
// answer the elicitation, sampling or roots requests it carries.
func inputRequired(server, what string) error {
	return fmt.Errorf("server %q: %s needs input that mcpdctl cannot give (input_required)", server, what)
}
