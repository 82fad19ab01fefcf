// Package registrytest serves recorded MCP Registry documents on
// 127.0.0.1 for tests: the read-only API of internal/registry, with
// search and cursor pagination.
package registrytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Dir is internal/registry/testdata, the recorded documents.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "registry", "testdata")
}

// Registry is a registry serving documents.
type Registry struct {
	*httptest.Server

	mu   sync.Mutex // guards following
	docs []doc
	hits map[string]int // path → requests
}

type doc struct {
	name, version string
	latest        bool
	raw           json.RawMessage
}

// Serve serves every *.json of Dir() until the test ends.
func Serve(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{hits: map[string]int{}}
	files, _ := filepath.Glob(filepath.Join(Dir(), "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r.Add(t, data)
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Add serves one more ServerResponse document; one marked isLatest makes
// the other versions of its server not latest.
func (r *Registry) Add(t testing.TB, data []byte) {
	t.Helper()
	var d struct {
		Server struct{ Name, Version string }
		Meta   struct {
			Official struct {
				IsLatest bool `json:"isLatest"`
			} `json:"io.modelcontextprotocol.registry/official"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Meta.Official.IsLatest {
		for i := range r.docs {
			if r.docs[i].name == d.Server.Name {
				r.docs[i].latest = false
			}
		}
	}
	r.docs = append(r.docs, doc{d.Server.Name, d.Server.Version, d.Meta.Official.IsLatest, data})
	sort.SliceStable(r.docs, func(i, j int) bool { return r.docs[i].name < r.docs[j].name })
}

// Hits is how many requests asked for path (without the query).
func (r *Registry) Hits(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[path]
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits[req.URL.Path]++
	w.Header().Set("Content-Type", "application/json")
	const prefix = "/v0.1/servers"
	switch {
	case req.URL.Path == prefix:
		r.list(w, req)
	case strings.HasPrefix(req.URL.EscapedPath(), prefix+"/"):
		// The name is one escaped segment: io.github.x%2Fy.
		parts := strings.Split(strings.TrimPrefix(req.URL.EscapedPath(), prefix+"/"), "/")
		if len(parts) != 3 || parts[1] != "versions" {
			http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
			return
		}
		name, _ := url.PathUnescape(parts[0])
		version, _ := url.PathUnescape(parts[2])
		for _, d := range r.docs {
			if d.name == name && (d.version == version || (version == "latest" && d.latest)) {
				w.Write(d.raw)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Server not found"}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not found"}`))
	}
}

// list pages through the matching servers: the cursor is the index of
// the next one.
func (r *Registry) list(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 30
	}
	limit = min(limit, 2) // small pages, so that tests page through
	start, _ := strconv.Atoi(q.Get("cursor"))
	var match []json.RawMessage
	for _, d := range r.docs {
		if q.Get("version") == "latest" && !d.latest {
			continue
		}
		if s := q.Get("search"); s != "" && !strings.Contains(d.name, s) {
			continue
		}
		match = append(match, d.raw)
	}
	end := min(start+limit, len(match))
	page := match[min(start, len(match)):end]
	out := map[string]any{"servers": page, "metadata": map[string]any{"count": len(page)}}
	if end < len(match) {
		out["metadata"].(map[string]any)["nextCursor"] = strconv.Itoa(end)
	}
	if page == nil {
		out["servers"] = []json.RawMessage{}
	}
	json.NewEncoder(w).Encode(out)
}
