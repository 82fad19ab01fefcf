package oauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
)

// logBuffer collects a Manager's log, at debug level, as text.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type testEnv struct {
	m     *Manager
	logs  *logBuffer
	clock *clock
	dir   string
}

func newTestManager(t *testing.T, dir string) *testEnv {
	t.Helper()
	logs := &logBuffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(logs), zap.DebugLevel)
	m := NewManager(dir, zap.New(core), &http.Client{Timeout: 10 * time.Second})
	c := &clock{t: time.Now()}
	m.now = c.now
	return &testEnv{m: m, logs: logs, clock: c, dir: dir}
}

// browser follows an authorization URL the way a browser whose user
// consents would: the authorization server redirects to the loopback.
func browser(t *testing.T, authURL string) int {
	t.Helper()
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// login runs a whole login for server against f.
func (e *testEnv) login(t *testing.T, f *oauthtest.Server, server string, cfg Config) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	flow, err := e.m.Login(ctx, server, f.MCPURL(), cfg, LoginOptions{})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if code := browser(t, flow.URL); code != http.StatusOK {
		flow.Close()
		t.Fatalf("redirect answered %d", code)
	}
	st, err := flow.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return st
}

// call makes one request to f's MCP endpoint the way a remote transport
// would: the Authorizer's token, and on 401/403 OnUnauthorized and at most
// one retry.
func call(ctx context.Context, a Authorizer, mcpURL string) (int, error) {
	for attempt := 0; ; attempt++ {
		tok, err := a.Token(ctx)
		if err != nil {
			return 0, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			return resp.StatusCode, nil
		}
		if err := a.OnUnauthorized(ctx, resp); err != nil || attempt > 0 {
			return resp.StatusCode, err
		}
	}
}
