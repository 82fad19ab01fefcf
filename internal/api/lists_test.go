package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The list RPCs (lists.go): across every server, or for one named server.

func TestListAggregates(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]string{}
	b := &fakeBackend{
		status: []supervisor.Status{
			{Name: "a", State: supervisor.StateReady},
			{Name: "b", State: supervisor.StateCrashLoop},
			{Name: "c", State: supervisor.StateReady},
			{Name: "off", Disabled: true},
		},
		list: func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error) {
			mu.Lock()
			asked[server] = method + " " + string(base.ClientInfo)
			mu.Unlock()
			switch server {
			case "a":
				return json.RawMessage(`[{"name":"t1"}]`), nil
			case "b":
				return nil, fmt.Errorf("in a crash loop: %w", supervisor.ErrUnavailable)
			case "c":
				return nil, fmt.Errorf("tools/list: %w", &session.RPCError{Code: -32601, Message: "Method not found"})
			}
			return nil, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
		},
	}
	h := newHarness(t, b)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), mcpdv1.MetadataClientName, "script", mcpdv1.MetadataClientVersion, "0.1")
	resp, err := h.client.ListTools(ctx, &mcpdv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*mcpdv1.ServerList{
		{Server: "a", ItemsJson: `[{"name":"t1"}]`, Cache: mcpdv1.CacheStatus_CACHE_STATUS_FETCHED},
		{Server: "b", Unavailable: `server "b" is unavailable: in a crash loop: supervisor: server unavailable`},
		{Server: "c", Error: &mcpdv1.McpError{Code: -32601, Message: "Method not found"}, Cache: mcpdv1.CacheStatus_CACHE_STATUS_FETCHED},
	}
	if diff := cmp.Diff(want, resp.GetServers(), protocmp.Transform()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	wantAsked := map[string]string{
		"a": `tools/list {"name":"script","version":"0.1"}`,
		"b": `tools/list {"name":"script","version":"0.1"}`,
		"c": `tools/list {"name":"script","version":"0.1"}`,
	}
	if diff := cmp.Diff(wantAsked, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}

	// Every list RPC uses its own method.
	for _, tc := range []struct {
		method string
		call   func() error
	}{
		{"prompts/list", func() error { _, err := h.client.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: "a"}); return err }},
		{"resources/list", func() error {
			_, err := h.client.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: "a"})
			return err
		}},
		{"resources/templates/list", func() error {
			_, err := h.client.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: "a"})
			return err
		}},
	} {
		if err := tc.call(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(asked["a"])[0]; got != tc.method {
			t.Errorf("method = %q, want %q", got, tc.method)
		}
	}
}

func TestListNamed(t *testing.T) {
	b := &fakeBackend{
		status: []supervisor.Status{{Name: "a"}, {Name: "b"}},
		list: func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error) {
			switch server {
			case "a":
				return json.RawMessage(`[]`), nil
			case "b":
				return nil, fmt.Errorf("server %q failed: %w", server, supervisor.ErrUnavailable)
			}
			return nil, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
		},
	}
	h := newHarness(t, b)
	resp, err := h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetServers()) != 1 || resp.GetServers()[0].GetServer() != "a" || resp.GetServers()[0].GetItemsJson() != "[]" {
		t.Errorf("servers = %v", resp.GetServers())
	}
	_, err = h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "nope"})
	wantCode(t, err, codes.NotFound, "unknown server")
	_, err = h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "b"})
	wantCode(t, err, codes.Unavailable, `server "b" failed`)
}
