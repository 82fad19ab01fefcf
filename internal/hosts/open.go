package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxFileSize bounds a host config file connect reads.
const MaxFileSize = 16 << 20

// An Opened is a host config file as read, with its entries.
type Opened struct {
	Host    *Host
	File    File
	Data    []byte
	Mode    fs.FileMode
	Entries []*Entry
	doc     document
}

// An Entry is one MCP server entry of a host file.
type Entry struct {
	Name string
	// Keys is the path of the map holding the entry; Where names it.
	Keys  []string
	Where string
	// Workspace is the project the host runs the server in, "" for none.
	Workspace string
	Server    Server
	Disabled  bool
	State     State
	// Why says why an Unsupported entry stays as it is.
	Why string
	e   *entry
}

// State is what connect makes of an entry.
type State string

const (
	// Direct entries run their server themselves: connect points them at mcpd.
	Direct State = "direct"
	// Connected entries already go through mcpd.
	Connected State = "connected"
	// Unsupported entries are ones mcpd cannot serve; connect leaves them.
	Unsupported State = "unsupported"
)

// Open reads f of h. A file that does not exist is fs.ErrNotExist.
func Open(h *Host, f File, m Mcpd) (*Opened, error) {
	fi, err := os.Stat(f.Path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", f.Path)
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", f.Path, MaxFileSize>>20)
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, err
	}
	o, err := openData(h, f, data, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	o.Mode = fi.Mode().Perm()
	return o, nil
}

// openData reads data as h's file f.
func openData(h *Host, f File, data []byte, m Mcpd) (*Opened, error) {
	doc, err := parse(f.Format, data)
	if err != nil {
		return nil, err
	}
	o := &Opened{Host: h, File: f, Data: data, doc: doc}
	for _, sm := range f.maps {
		es, err := mapEntries(doc, sm)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			o.Entries = append(o.Entries, o.classify(sm, e, m))
		}
	}
	return o, nil
}

// classify makes an Entry of e.
func (o *Opened) classify(sm serverMap, e *entry, m Mcpd) *Entry {
	en := &Entry{Name: e.name, Keys: e.keys, Where: where(e.keys), Workspace: o.File.Workspace,
		Disabled: disabled(e.fields), e: e}
	if sm.workspaceAt > 0 && sm.workspaceAt < len(e.keys) {
		en.Workspace = e.keys[sm.workspaceAt]
	}
	fields := e.fields
	if o.Host.fields != nil {
		fields = o.Host.fields(fields)
	}
	srv, err := o.Host.shape.decode(fields)
	en.Server = srv
	switch {
	case err != nil:
		en.State, en.Why = Unsupported, err.Error()
	case e.name == "":
		en.State, en.Why = Unsupported, `it has no "name"`
	case o.Host == goose && !slices.Contains([]string{"stdio", "streamable_http", "sse"}, typeOf(e.fields)):
		en.State, en.Why = Unsupported, fmt.Sprintf("it is a Goose %q extension, which only Goose runs", typeOf(e.fields))
	case m.isMcpd(srv):
		en.State = Connected
	case srv.URL == "" && srv.Command == "":
		en.State, en.Why = Unsupported, "it names no command and no URL (a host extension only the host can run)"
	case o.Host == goose && len(asList(e.fields["env_keys"])) > 0:
		en.State, en.Why = Unsupported, "its env_keys are secrets Goose keeps in its keyring, which mcpd cannot read"
	case usesInput(srv):
		en.State, en.Why = Unsupported, "it uses a ${input:…} variable the host prompts for, which mcpd cannot ask"
	case usesTemplate(srv):
		en.State, en.Why = Unsupported, "it uses a ${{ … }} secret or input Continue fills in, which mcpd cannot"
	default:
		en.State = Direct
	}
	return en
}

func typeOf(f map[string]any) string {
	t, _ := f["type"].(string)
	return t
}

func usesInput(s Server) bool { return anyValue(s, "${input:") }

// anyValue reports whether a string of s (command, args, environment,
// working directory, URL, headers) holds sub.
func anyValue(s Server, sub string) bool {
	vals := append([]string{s.Command, s.Cwd, s.URL}, s.Args...)
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, v := range m {
			vals = append(vals, v)
		}
	}
	for _, v := range vals {
		if strings.Contains(v, sub) {
			return true
		}
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// usesTemplate reports whether s names one of Continue's ${{ secrets.X }}
// or ${{ inputs.X }}.
func usesTemplate(s Server) bool { return anyValue(s, "${{") }

// Mcpd says how hosts reach mcpd.
type Mcpd struct {
	// Ctl is the absolute path of the mcpdctl hosts run as the bridge.
	Ctl string
	// GlobalArgs go before "bridge" (--socket PATH when not the default).
	GlobalArgs []string
	// HTTP is the HTTP face's base URL (http://127.0.0.1:6273), "" when
	// hosts must use the bridge.
	HTTP string
}

// A Target is where connect points an entry: mcpd's per-server HTTP door,
// or a command that runs mcpdctl's bridge.
type Target struct {
	// Server is the mcpd server the entry reaches.
	Server  string
	URL     string
	Command string
	Args    []string
}

// Target is where h's entry for mcpd's server name points; root is the
// workspace a "root" server runs in, "" for none. A host that takes URLs
// gets the HTTP door, with ?root= for a project directory; a root the
// host fills in itself (${workspaceFolder}) needs the bridge's --root,
// since hosts expand their variables in a command's arguments.
func (m Mcpd) Target(h *Host, name, root string) Target {
	if h.HTTP && m.HTTP != "" && !strings.HasPrefix(root, "${") {
		u := m.HTTP + "/servers/" + url.PathEscape(name) + "/mcp"
		if root != "" {
			u += "?root=" + url.QueryEscape(filepath.Clean(root))
		}
		return Target{Server: name, URL: u}
	}
	args := append(slices.Clone(m.GlobalArgs), "bridge")
	if root != "" {
		args = append(args, "--root", root)
	}
	return Target{Server: name, Command: m.Ctl, Args: append(args, name)}
}

// DefaultHTTPPort is the port of mcpd's HTTP face by default.
const DefaultHTTPPort = "6273"

// isMcpd reports whether s already goes through mcpd: it runs mcpdctl's
// bridge, or its URL is a door of mcpd's HTTP face.
func (m Mcpd) isMcpd(s Server) bool {
	if s.Command != "" {
		return strings.TrimSuffix(filepath.Base(s.Command), ".exe") == "mcpdctl" && slices.Contains(s.Args, "bridge")
	}
	if m.HTTP != "" && strings.HasPrefix(s.URL, m.HTTP+"/") {
		return true
	}
	p, err := url.Parse(s.URL)
	if err != nil || p.Scheme != "http" || p.Port() != DefaultHTTPPort {
		return false
	}
	host := p.Hostname()
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return false
	}
	path := strings.TrimSuffix(p.Path, "/")
	return path == "/mcp" || strings.HasPrefix(path, "/servers/") && strings.HasSuffix(path, "/mcp")
}

// Present returns the files of h that exist in env, opened, and the
// problems of those that could not be read.
func Present(h *Host, env Env, m Mcpd) ([]*Opened, []error) {
	var out []*Opened
	var errs []error
	for _, f := range h.Files(env) {
		o, err := Open(h, f, m)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, err)
		default:
			out = append(out, o)
		}
	}
	return out, errs
}
