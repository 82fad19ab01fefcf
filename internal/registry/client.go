package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the official MCP Registry.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// Defaults of a Client.
const (
	// DefaultFresh is how long a cached answer is used without asking the
	// registry again.
	DefaultFresh = time.Hour
	// MaxResponse bounds one answer of the registry, in bytes.
	MaxResponse = 8 << 20
	// DefaultTimeout bounds one request when the context has no deadline.
	DefaultTimeout = 30 * time.Second
)

// Errors of the client.
var (
	// ErrNotFound is a server or version the registry does not have.
	ErrNotFound = errors.New("registry: not found")
	// ErrUnreachable wraps a failure to get any answer from the registry
	// (as opposed to an answer that is an error).
	ErrUnreachable = errors.New("registry: unreachable")
)

// Client reads a registry's API. Its methods may be called concurrently.
type Client struct {
	// BaseURL is the registry, e.g. DefaultURL; without a trailing slash.
	BaseURL string
	// CacheDir holds the cached answers; "" disables the cache.
	CacheDir string
	// Fresh is how long a cached answer is used without asking again; if
	// zero, DefaultFresh. A negative value always asks (and still falls back
	// to the cache when the registry cannot be reached).
	Fresh time.Duration
	// HTTP is the client used; if nil, a client of its own (Close releases
	// its connections).
	HTTP *http.Client
	// Now is the clock; if nil, time.Now.
	Now func() time.Time

	own *http.Client
}

// New returns a client of the registry at baseURL caching under cacheDir.
func New(baseURL, cacheDir string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("registry URL %q: want an http:// or https:// URL", baseURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), CacheDir: cacheDir,
		own: &http.Client{Transport: tr}}, nil
}

// Close releases the idle connections of the client's own HTTP client.
func (c *Client) Close() {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
}

// CacheDir is where mcpd keeps registry answers: stateDir/registry/cache.
func CacheDir(stateDir string) string { return filepath.Join(stateDir, "registry", "cache") }

// Answer says where an answer came from.
type Answer struct {
	// URL is the request's URL (for a search, its first page).
	URL string
	// FetchedAt is when the registry gave the answer.
	FetchedAt time.Time
	// Cached reports that the answer came from the cache.
	Cached bool
	// Offline is the error that made the client use the cache, nil when
	// the cache was fresh or the registry answered.
	Offline error
}

// SearchResult is a search's servers, in the registry's order.
type SearchResult struct {
	Entries []Entry
	// More reports that the registry had more than the limit.
	More bool
	Answer
}

// Search lists the servers whose name matches term (all with term ""),
// following the cursor up to limit servers (if limit <= 0, 100), latest
// versions only.
func (c *Client) Search(ctx context.Context, term string, limit int) (*SearchResult, error) {
	if limit <= 0 {
		limit = 100
	}
	res := &SearchResult{}
	cursor := ""
	for page := 0; ; page++ {
		q := url.Values{}
		if term != "" {
			q.Set("search", term)
		}
		q.Set("version", "latest")
		q.Set("limit", strconv.Itoa(min(limit-len(res.Entries), 100)))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		body, ans, err := c.get(ctx, c.BaseURL+"/v0.1/servers?"+q.Encode())
		if err != nil {
			return nil, err
		}
		if page == 0 {
			res.Answer = ans
		} else if ans.Cached {
			// The answer is as old as its oldest page.
			res.Cached = true
			if ans.FetchedAt.Before(res.FetchedAt) {
				res.FetchedAt = ans.FetchedAt
			}
			if res.Offline == nil {
				res.Offline = ans.Offline
			}
		}
		var l list
		if err := json.Unmarshal(body, &l); err != nil {
			return nil, fmt.Errorf("registry: %s: not a server list: %w", ans.URL, err)
		}
		res.Entries = append(res.Entries, l.Servers...)
		cursor = l.Metadata.NextCursor
		if len(res.Entries) >= limit {
			res.More = cursor != "" || len(res.Entries) > limit
			res.Entries = res.Entries[:limit]
			return res, nil
		}
		if cursor == "" || len(l.Servers) == 0 {
			return res, nil
		}
	}
}

// Get returns one version of the server name; version "" or "latest" is
// its latest.
func (c *Client) Get(ctx context.Context, name, version string) (*Entry, Answer, error) {
	if version == "" {
		version = "latest"
	}
	u := c.BaseURL + "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	body, ans, err := c.get(ctx, u)
	if err != nil {
		return nil, ans, err
	}
	var e Entry
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, ans, fmt.Errorf("registry: %s: not a server: %w", u, err)
	}
	if e.Server.Name == "" {
		return nil, ans, fmt.Errorf("registry: %s: the answer has no server name", u)
	}
	return &e, ans, nil
}

// cached is one cached answer on disk.
type cached struct {
	URL       string          `json:"url"`
	FetchedAt time.Time       `json:"fetchedAt"`
	Body      json.RawMessage `json:"body"`
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Client) fresh() time.Duration {
	if c.Fresh == 0 {
		return DefaultFresh
	}
	return c.Fresh
}

// get answers u from a fresh cache entry, else from the registry (caching
// the answer), else, when the registry cannot be reached, from a stale
// cache entry.
func (c *Client) get(ctx context.Context, u string) ([]byte, Answer, error) {
	hit, _ := c.readCache(u)
	if hit != nil && c.now().Sub(hit.FetchedAt) < c.fresh() {
		return hit.Body, Answer{URL: u, FetchedAt: hit.FetchedAt, Cached: true}, nil
	}
	body, err := c.fetch(ctx, u)
	if err != nil {
		if hit != nil && errors.Is(err, ErrUnreachable) {
			return hit.Body, Answer{URL: u, FetchedAt: hit.FetchedAt, Cached: true, Offline: err}, nil
		}
		return nil, Answer{URL: u}, err
	}
	at := c.now()
	c.writeCache(cached{URL: u, FetchedAt: at, Body: body}) // best effort
	return body, Answer{URL: u, FetchedAt: at}, nil
}

// fetch GETs u: the body of a 200 answer that is JSON, at most MaxResponse
// bytes.
func (c *Client) fetch(ctx context.Context, u string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = c.own
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrUnreachable, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: reading the answer: %w", ErrUnreachable, u, err)
	}
	if len(body) > MaxResponse {
		return nil, fmt.Errorf("registry: GET %s: answer larger than %d bytes", u, MaxResponse)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: GET %s: %s%s", ErrNotFound, u, resp.Status, errorText(body))
	case resp.StatusCode >= 500:
		// The registry is there but cannot answer now: the cache may.
		return nil, fmt.Errorf("%w: GET %s: %s%s", ErrUnreachable, u, resp.Status, errorText(body))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("registry: GET %s: %s%s", u, resp.Status, errorText(body))
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("registry: GET %s: the answer is not JSON", u)
	}
	return body, nil
}

// errorText is ": message" of an error answer ({"error": "..."} or the
// RFC 9457 problem "detail"/"title" the registry may send), or "".
func errorText(body []byte) string {
	var e struct{ Error, Detail, Title string }
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	for _, s := range []string{e.Detail, e.Error, e.Title} {
		if s = strings.TrimSpace(s); s != "" {
			if len(s) > 300 {
				s = s[:300] + "…"
			}
			return ": " + s
		}
	}
	return ""
}

func (c *Client) cachePath(u string) string {
	sum := sha256.Sum256([]byte(u))
	return filepath.Join(c.CacheDir, hex.EncodeToString(sum[:16])+".json")
}

func (c *Client) readCache(u string) (*cached, error) {
	if c.CacheDir == "" {
		return nil, fs.ErrNotExist
	}
	f, err := os.Open(c.cachePath(u))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 2*MaxResponse))
	if err != nil {
		return nil, err
	}
	var e cached
	if err := json.Unmarshal(data, &e); err != nil || e.URL != u {
		return nil, fmt.Errorf("cache entry of %s unusable", u)
	}
	return &e, nil
}

func (c *Client) writeCache(e cached) {
	if c.CacheDir == "" {
		return
	}
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	if err := os.MkdirAll(c.CacheDir, 0o700); err != nil {
		return
	}
	_ = writeFileAtomic(c.cachePath(e.URL), data, 0o600)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
