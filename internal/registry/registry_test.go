package registry_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/registry"
	"github.com/mcpd-dev/mcpd/internal/testing/registrytest"
)

func newClient(t *testing.T, url string) *registry.Client {
	t.Helper()
	c, err := registry.New(url, filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSearchPages follows the cursor over pages of two.
func TestSearchPages(t *testing.T) {
	reg := registrytest.Serve(t)
	c := newClient(t, reg.URL)
	res, err := c.Search(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range res.Entries {
		names = append(names, e.Server.Name+"@"+e.Server.Version)
	}
	want := []string{
		"io.github.domdomegg/airtable-mcp-server@1.7.3",
		"io.github.domdomegg/time-mcp-pypi@1.0.6",
		"io.github.example/old-weather@0.9.5",
		"io.modelcontextprotocol.anonymous/hybrid-mcp@1.5.0",
		"io.skaphos/sting@0.8.0",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	if n := reg.Hits("/v0.1/servers"); n != 3 {
		t.Errorf("%d list requests, want 3 pages", n)
	}
	if res.More || res.Cached {
		t.Errorf("More %v Cached %v, want neither", res.More, res.Cached)
	}
	lim, err := c.Search(context.Background(), "io.github", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(lim.Entries) != 2 || !lim.More {
		t.Errorf("limit 2: %d entries, More %v", len(lim.Entries), lim.More)
	}
}

// TestSearchOffline answers from the cache, fresh without asking, stale
// when the registry is gone, saying how old.
func TestSearchOffline(t *testing.T) {
	reg := registrytest.Serve(t)
	c := newClient(t, reg.URL)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Now = func() time.Time { return now }
	if _, err := c.Search(context.Background(), "sting", 10); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute)
	res, err := c.Search(context.Background(), "sting", 10)
	if err != nil || !res.Cached || res.Offline != nil || reg.Hits("/v0.1/servers") != 1 {
		t.Fatalf("fresh cache: %v, cached %v offline %v, %d requests", err, res.Cached, res.Offline, reg.Hits("/v0.1/servers"))
	}
	reg.Close()
	now = now.Add(2 * time.Hour)
	res, err = c.Search(context.Background(), "sting", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cached || !errors.Is(res.Offline, registry.ErrUnreachable) || now.Sub(res.FetchedAt) != 2*time.Hour+10*time.Minute {
		t.Errorf("stale: cached %v, offline %v, age %v", res.Cached, res.Offline, now.Sub(res.FetchedAt))
	}
	if len(res.Entries) != 1 || res.Entries[0].Server.Name != "io.skaphos/sting" {
		t.Errorf("entries %+v", res.Entries)
	}
	if _, err := c.Search(context.Background(), "other", 10); !errors.Is(err, registry.ErrUnreachable) || !strings.Contains(err.Error(), reg.URL) {
		t.Errorf("uncached search offline: %v, want unreachable naming the URL", err)
	}
}

// TestGet reads latest and exact versions, escaping the name, and names
// the URL and status of a miss.
func TestGet(t *testing.T) {
	reg := registrytest.Serve(t)
	c := newClient(t, reg.URL)
	e, _, err := c.Get(context.Background(), "io.github.domdomegg/airtable-mcp-server", "latest")
	if err != nil || e.Server.Version != "1.7.3" || e.Status() != registry.StatusActive {
		t.Fatalf("latest: %v %+v", err, e)
	}
	e, _, err = c.Get(context.Background(), "io.github.domdomegg/airtable-mcp-server", "1.7.2")
	if err != nil || e.Server.Version != "1.7.2" {
		t.Fatalf("1.7.2: %v", err)
	}
	e, _, err = c.Get(context.Background(), "io.github.example/old-weather", "")
	if err != nil || e.Status() != registry.StatusDeprecated || e.StatusMessage() != "Use weather-v2 instead for new projects" {
		t.Fatalf("deprecated: %v %+v", err, e)
	}
	_, _, err = c.Get(context.Background(), "io.github.nobody/none", "")
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "io.github.nobody%2Fnone") || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing: %v", err)
	}
}

func load(t *testing.T, file string) *registry.Entry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(registrytest.Dir(), file))
	if err != nil {
		t.Fatal(err)
	}
	var e registry.Entry
	if err := e.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return &e
}

// have makes a lookPath that finds only the given commands.
func have(cmds ...string) func(string) (string, error) {
	return func(c string) (string, error) {
		for _, h := range cmds {
			if h == c {
				return "/usr/bin/" + c, nil
			}
		}
		return "", exec.ErrNotFound
	}
}

func vars(m map[string]string) registry.Asker {
	return func(v registry.Var) (string, bool, error) {
		s, ok := m[v.Key]
		return s, ok, nil
	}
}

func TestConvert(t *testing.T) {
	tests := []struct {
		file    string
		path    []string
		vars    map[string]string
		want    registry.Config
		secrets map[string]string
		missing []string
	}{{
		file: "npm-airtable-1.7.3.json", path: []string{"npx", "docker"},
		vars:    map[string]string{"AIRTABLE_API_KEY": "pat1.x"},
		want:    registry.Config{Command: "npx", Args: []string{"-y", "airtable-mcp-server@1.7.3"}, Env: map[string]string{"AIRTABLE_API_KEY": "${secret:AIRTABLE_API_KEY}"}},
		secrets: map[string]string{"AIRTABLE_API_KEY": "pat1.x"},
	}, {
		file: "npm-airtable-1.7.3.json", path: []string{"podman"},
		want:    registry.Config{Command: "podman", Args: []string{"run", "-i", "--rm", "docker.io/domdomegg/airtable-mcp-server:1.7.3"}},
		missing: []string{"AIRTABLE_API_KEY"},
	}, {
		file: "pypi-time.json", path: []string{"uvx", "python"},
		want: registry.Config{Command: "uvx", Args: []string{"time-mcp-pypi@1.0.6"}},
	}, {
		file: "oci-sting.json", path: []string{"docker"},
		vars: map[string]string{"STING_TOKEN": "ghp_x"},
		want: registry.Config{Command: "docker", Args: []string{"run", "-i", "--rm", "-e", "STING_TOKEN", "ghcr.io/skaphos/sting:0.8.0"},
			Env: map[string]string{"STING_TOKEN": "${secret:STING_TOKEN}"}},
		secrets: map[string]string{"STING_TOKEN": "ghp_x"},
	}, {
		file: "remote-hybrid.json", path: nil,
		vars: map[string]string{"X-API-Key": "k-1"},
		want: registry.Config{Type: "http", URL: "https://mcp.anonymous.modelcontextprotocol.io/http",
			Headers: map[string]string{"X-API-Key": "${secret:HYBRID_X_API_KEY}", "X-Region": "us-east-1"}},
		secrets: map[string]string{"HYBRID_X_API_KEY": "k-1"},
	}, {
		file: "remote-hybrid.json", path: []string{"npx"},
		want: registry.Config{Command: "npx", Args: []string{"-y", "@example/hybrid-mcp-server@1.5.0", "--mode", "local"}},
	}}
	for _, tt := range tests {
		t.Run(tt.file+"/"+strings.Join(tt.path, ","), func(t *testing.T) {
			e := load(t, tt.file)
			ch, err := registry.Choose(&e.Server, have(tt.path...))
			if err != nil {
				t.Fatal(err)
			}
			b, err := ch.Build("hybrid", vars(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.secrets, b.Secrets); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
			var missing []string
			for _, v := range b.Missing {
				missing = append(missing, v.Key)
			}
			if diff := cmp.Diff(tt.missing, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChooseNoWay(t *testing.T) {
	e := load(t, "pypi-time.json")
	_, err := registry.Choose(&e.Server, have("npx"))
	if !errors.Is(err, registry.ErrNoWay) || !strings.Contains(err.Error(), "needs uvx, not found in PATH") {
		t.Errorf("err %v", err)
	}
}

// TestFixedValues fills {variables}, keeps secrets out of the entry and
// literal ${ literal.
func TestFixedValues(t *testing.T) {
	s := registry.Server{Name: "a/b", Remotes: []registry.Remote{{Type: "sse", URL: "https://{tenant}.example/sse",
		Variables: map[string]registry.Input{"tenant": {IsRequired: true}},
		Headers: []registry.KeyValue{{Name: "Authorization", Input: registry.Input{Value: "Bearer {token}",
			Variables: map[string]registry.Input{"token": {IsRequired: true, IsSecret: true}}}},
			{Name: "X-Lit", Input: registry.Input{Value: "${HOME}"}}}}}}
	ch, err := registry.Choose(&s, have())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ch.Build("b", vars(map[string]string{"tenant": "acme", "token": "t0k"}))
	if err != nil {
		t.Fatal(err)
	}
	want := registry.Config{Type: "sse", URL: "https://acme.example/sse",
		Headers: map[string]string{"Authorization": "Bearer ${secret:B_TOKEN}", "X-Lit": "$${HOME}"}}
	if diff := cmp.Diff(want, b.Config); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if b.Secrets["B_TOKEN"] != "t0k" {
		t.Errorf("secrets %v", b.Secrets)
	}
}

func TestNewer(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"1.7.3", "1.7.2", true}, {"1.7.2", "1.7.3", false}, {"1.10.0", "1.9.9", true}, {"2.0.0", "2.0.0-rc1", true},
		{"2.0.0-rc1", "2.0.0", false}, {"1.0", "1.0", false}, {"2024.1", "2023.9", true}} {
		if got := registry.Newer(tt.a, tt.b); got != tt.want {
			t.Errorf("Newer(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestRecords(t *testing.T) {
	path := registry.RecordsPath(t.TempDir())
	r, err := registry.LoadRecords(path)
	if err != nil || len(r) != 0 {
		t.Fatalf("missing file: %v %v", r, err)
	}
	r["air"] = registry.Record{Name: "io.github.domdomegg/airtable-mcp-server", Version: "1.7.2", Registry: "http://x"}
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := registry.LoadRecords(path)
	if err != nil || back["air"].Version != "1.7.2" {
		t.Errorf("%v %v", back, err)
	}
}
