package e2e

import (
	"net/http"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

// remoteUpstream is a running real remote MCP server and what the remote
// matrix asks of it, in the server's own tools and resources.
type remoteUpstream struct {
	entry map[string]any // mcpd's config entry for it
	era   string         // the era mcpd agrees on with it
	tools []string       // tools its list holds
	// settle waits until the server is done with the requests it sends
	// mcpd on its own after the handshake.
	settle func(t *testing.T)

	echoPrefix string // what its echo puts before the message

	progress      toolCall // reports steps progress notifications
	progressSteps int

	// long(n) is a call that runs until it is cancelled; n tells calls
	// apart. started waits until the server has it, cancelled until the
	// server heard of its cancellation.
	long      func(n int) toolCall
	started   func(t *testing.T, n int)
	cancelled func(t *testing.T, n int)

	resource     string // read and subscribed to
	resourceText string // in what a read of it answers

	update toolCall // makes the server announce an update of resource
	// updateOnce: update turns periodic updates on (again, off), so it is
	// called once and the update waited for; otherwise it is called until
	// the update arrives.
	updateOnce bool
}

// toolCall is a tool and its arguments.
type toolCall struct {
	name string
	args map[string]any
}

// remoteUpstreams are the remote servers of the matrix: the Go SDK's
// Streamable HTTP handler in both its modes, the TypeScript SDK's
// Streamable HTTP server (server-everything's own), and the 2024-11-05
// HTTP+SSE transport (the TypeScript SDK's, in supergateway in front of
// server-everything on stdio).
var remoteUpstreams = []struct {
	name  string
	start func(t *testing.T) *remoteUpstream
}{
	// Stateful sessions: the handler lists no 2026-07-28 version.
	{"gosdk-stateful", func(t *testing.T) *remoteUpstream { return goSDKUpstream(t, "legacy") }},
	{"gosdk-stateless", func(t *testing.T) *remoteUpstream { return goSDKUpstream(t, "modern", "-stateless") }},
	{"everything-streamable-http", func(t *testing.T) *remoteUpstream {
		_, base := upstream.Everything(t, "streamableHttp")
		// server-everything logs nothing of what it receives: the tap hears it.
		tap := upstream.NewTap(t, base)
		return everythingUpstream(map[string]any{"url": tap.URL + "/mcp"}, tap)
	}},
	{"everything-sse-supergateway", func(t *testing.T) *remoteUpstream {
		gw := upstream.Supergateway(t)
		return everythingUpstream(map[string]any{"url": gw.SSEURL, "type": "sse"}, gw)
	}},
}

// goSDKUpstream is the Go SDK test server with -http and flags; its sleep
// tool logs its start and its cancellation.
func goSDKUpstream(t *testing.T, era string, flags ...string) *remoteUpstream {
	p := upstream.GoSDK(t, gosdkBin, flags...)
	return &remoteUpstream{
		entry:         map[string]any{"url": p.URL},
		era:           era,
		tools:         []string{"echo", "progress", "sleep", "touch"},
		settle:        func(*testing.T) {}, // it sends none
		progress:      toolCall{"progress", map[string]any{"steps": 3}},
		progressSteps: 3,
		long:          func(n int) toolCall { return toolCall{"sleep", map[string]any{"ms": n}} },
		started:       func(t *testing.T, n int) { p.WaitLine(t, "sleep started "+itoa(n)) },
		cancelled:     func(t *testing.T, n int) { p.WaitLine(t, "sleep cancelled "+itoa(n)) },
		resource:      "test://a",
		resourceText:  "hello a",
		update:        toolCall{"touch", map[string]any{"uri": "test://a"}},
	}
}

// everythingUpstream is server-everything at entry; ear hears what it
// receives. Its long-running operation does not stop when cancelled (the
// tool ignores its abort signal): the cancellation is checked where the
// server receives it, as the notifications/cancelled of that call.
// Resource updates come from toggle-subscriber-updates, which sends one for
// each subscribed resource at once and then every 5 seconds.
func everythingUpstream(entry map[string]any, ear upstream.Ear) *remoteUpstream {
	const long = "trigger-long-running-operation"
	calls := map[int]upstream.Message{} // what started saw, by n
	return &remoteUpstream{
		entry: entry,
		era:   "legacy",
		tools: []string{"echo", long, "toggle-subscriber-updates"},
		// It asks for the roots 350 ms after the handshake. During a modern
		// host's call that request parks the call (the bridge answers it
		// input_required), and the call's progress meanwhile has no host
		// request to go to: the progress call waits for the answer.
		settle: func(t *testing.T) {
			ear.WaitMessage(t, "the answer to its roots/list", func(m upstream.Message) bool { return m.Method == "" && len(m.ID) > 0 })
		},
		echoPrefix:    "Echo: ",
		progress:      toolCall{long, map[string]any{"duration": 0.3, "steps": 3}},
		progressSteps: 3,
		// n seconds in one step: far longer than any test.
		long: func(n int) toolCall { return toolCall{long, map[string]any{"duration": n, "steps": 1}} },
		started: func(t *testing.T, n int) {
			calls[n] = ear.WaitMessage(t, "tools/call of "+long+" "+itoa(n), upstream.IsCall(long, "duration", n))
		},
		cancelled: func(t *testing.T, n int) {
			m := ear.WaitMessage(t, "notifications/cancelled of "+long+" "+itoa(n), upstream.IsCancelOf(calls[n]))
			if m.Status != 0 && m.Status != http.StatusAccepted {
				t.Errorf("the server answered the cancellation %d, want 202", m.Status)
			}
		},
		resource:     "demo://resource/static/document/instructions.md",
		resourceText: "Everything Server",
		update:       toolCall{"toggle-subscriber-updates", map[string]any{}},
		updateOnce:   true,
	}
}
