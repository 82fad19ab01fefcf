package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// conformanceDriver is an MCP client for the conformance suite's auth
// scenarios: the Go SDK's client over Streamable HTTP, authorized by this
// package the way mcpd's remote transport is, logging in (following the
// authorization URL as a consenting browser would) whenever the
// Authorizer says a login is required.
func conformanceDriver(serverURL string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var cfg Config
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		var c struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		}
		if json.Unmarshal([]byte(raw), &c) == nil {
			cfg.ClientID, cfg.ClientSecret = c.ClientID, c.ClientSecret
		}
	}
	dir, err := os.MkdirTemp("", "mcpd-oauth-driver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	log, _ := zap.NewDevelopment()
	m := NewManager(dir, log, &http.Client{Timeout: 10 * time.Second})
	rt := &loginTransport{m: m, a: m.For("conformance", serverURL, cfg), url: serverURL, cfg: cfg}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpd-oauth-driver", Version: "0"}, nil)
	var opts *mcp.ClientSessionOptions
	if v := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"); v != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: serverURL, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true,
	}, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		fmt.Fprintln(os.Stderr, "tools/list:", err)
		return 1
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		fmt.Fprintln(os.Stderr, "tools/call:", err)
		return 1
	}
	return 0
}

// loginTransport adds the bearer token, and on 401/403 asks the Authorizer,
// logging in when it says so, at most maxLogins times.
type loginTransport struct {
	m      *Manager
	a      Authorizer
	url    string
	cfg    Config
	logins int
}

const maxLogins = 3

func (t *loginTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	for {
		tok, err := t.a.Token(ctx)
		if errors.Is(err, ErrLoginRequired) {
			if err := t.login(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		r := req.Clone(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		err = t.a.OnUnauthorized(ctx, resp)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrLoginRequired) {
			return nil, err
		}
		if err := t.login(ctx); err != nil {
			return nil, err
		}
	}
}

func (t *loginTransport) login(ctx context.Context) error {
	if t.logins >= maxLogins {
		return fmt.Errorf("still unauthorized after %d logins", t.logins)
	}
	t.logins++
	flow, err := t.m.Login(ctx, "conformance", t.url, t.cfg, LoginOptions{})
	if err != nil {
		return err
	}
	resp, err := http.Get(flow.URL)
	if err != nil {
		flow.Close()
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	_, err = flow.Wait(ctx)
	return err
}
