package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/hosts"
)

// McpdConfig is mcpd's config file as connect sees it: the servers it has
// and those connect adds.
type McpdConfig struct {
	// Path is the file; Data its content as read, nil when it does not
	// exist.
	Path string
	Data []byte
	// have are the servers of the file, added those connect adds.
	have, added map[string]Server
}

// Has reports whether the config has a server name (one added included).
func (mc *McpdConfig) Has(name string) bool {
	_, ok := mc.have[name]
	return ok
}

// Added returns the names of the servers added, sorted.
func (mc *McpdConfig) Added() []string { return slices.Sorted(mapKeys(mc.added)) }

// forget takes back the servers names added.
func (mc *McpdConfig) forget(names []string) {
	for _, name := range names {
		delete(mc.have, name)
		delete(mc.added, name)
	}
}

// ReadMcpdConfig reads mcpd's config file at path (absent: no servers).
func ReadMcpdConfig(ctx context.Context, path string) (*McpdConfig, error) {
	mc := &McpdConfig{Path: path, have: map[string]Server{}, added: map[string]Server{}}
	data, err := config.ReadFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return mc, nil
	}
	if err != nil {
		return nil, err
	}
	mc.Data = data
	std, err := StandardJSON(data)
	if err != nil {
		return nil, fmt.Errorf("mcpd's config %s: %w", path, err)
	}
	var top struct {
		McpServers map[string]Server `json:"mcpServers"`
		Servers    map[string]Server `json:"servers"`
	}
	if err := json.Unmarshal(std, &top); err != nil {
		return nil, fmt.Errorf("mcpd's config %s: %w", path, err)
	}
	for _, m := range []map[string]Server{top.Servers, top.McpServers} {
		for name, s := range m {
			mc.have[name] = s
		}
	}
	return mc, nil
}

// sameRun reports whether a and b are one server to share: the same
// command, arguments, environment and directory, or the same URL.
func sameRun(a, b Server) bool {
	if a.URL != "" || b.URL != "" {
		return a.URL == b.URL
	}
	a.Disabled, b.Disabled = false, false
	a.Headers, b.Headers, a.Type, b.Type = nil, nil, "", ""
	return sameServer(a, b)
}

// Place finds the mcpd server for s, wanted under name: one already the
// same, else name when it is free. A name held by another server is a
// clash, described naming both.
func (mc *McpdConfig) Place(name string, s Server) (string, bool, error) {
	for _, n := range slices.Sorted(mapKeys(mc.have)) {
		if sameRun(mc.have[n], s) {
			return n, false, nil
		}
	}
	if old, taken := mc.have[name]; taken {
		return "", false, fmt.Errorf("mcpd's server %q (%s) is another server than the host's %q (%s)",
			name, describe(old), name, describe(s))
	}
	return name, true, nil
}

// Add adds s to the config under name.
func (mc *McpdConfig) Add(name string, s Server) {
	mc.have[name] = s
	mc.added[name] = s
}

func describe(s Server) string {
	if s.URL != "" {
		return "url " + RemoteRef(s.URL)
	}
	return fmt.Sprintf("command %q", strings.TrimSpace(s.Command+" "+strings.Join(s.Args, " ")))
}

func mapKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Updated is mcpd's config with the added servers, nil when none were.
func (mc *McpdConfig) Updated() ([]byte, error) {
	if len(mc.added) == 0 {
		return nil, nil
	}
	if len(bytes.TrimSpace(mc.Data)) == 0 {
		return MarshalIndent(map[string]any{"mcpServers": mc.added})
	}
	into := ""
	if v, err := hujson.Parse(mc.Data); err == nil {
		for _, key := range []string{"mcpServers", "servers"} {
			if v.Find("/"+key) != nil {
				into = key
				break
			}
		}
	}
	return PatchServers(mc.Path, mc.Data, into, mc.added)
}

// FromEntry converts a host's entry to the mcpd server it becomes, with
// the host's variables made mcpd's, and says what it had to change.
func FromEntry(o *hosts.Opened, e *hosts.Entry, home string) (Server, []string, string) {
	s := e.Untied()
	hs := hostServer{Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, EnvFile: s.EnvFile, URL: s.URL, Headers: s.Headers}
	m := serverMap{where: e.Where}
	root := e.Root()
	if root == "" {
		m.workspace = e.Workspace
	}
	im := &importer{file: o.File.Path, home: home, from: map[string]string{}}
	var out Server
	if s.URL != "" {
		hs.Remote, hs.Type = "url", s.Transport
		if s.Transport == "http" {
			hs.Type = "http"
		}
		if why := remoteSkip(hs); why != "" {
			return out, nil, why
		}
		out = im.convertRemote(m, e.Name, hs)
	} else {
		out = im.convert(m, e.Name, hs)
	}
	if root != "" {
		out.Share = "root"
	}
	return out, im.res.Notes, ""
}

// StandardJSON is data, JSON with comments, as standard JSON.
func StandardJSON(data []byte) ([]byte, error) {
	v, err := hujson.Parse(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if err != nil {
		return nil, err
	}
	v.Standardize()
	return v.Pack(), nil
}

// RemoveServers is mcpd's config without the servers names, its
// comments and layout kept.
func RemoveServers(mc *McpdConfig, names []string) ([]byte, error) {
	v, err := hujson.Parse(mc.Data)
	if err != nil {
		return nil, fmt.Errorf("mcpd's config %s: %w", mc.Path, err)
	}
	ptr := strings.NewReplacer("~", "~0", "/", "~1")
	var ops []map[string]string
	for _, name := range names {
		for _, key := range []string{"mcpServers", "servers"} {
			p := "/" + key + "/" + ptr.Replace(name)
			if v.Find(p) != nil {
				ops = append(ops, map[string]string{"op": "remove", "path": p})
			}
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("mcpd's config %s: %w", mc.Path, err)
	}
	for _, name := range names {
		delete(mc.have, name)
	}
	return v.Pack(), nil
}
