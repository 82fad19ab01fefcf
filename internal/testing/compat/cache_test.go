package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// daemon is a real supervisor behind the real gRPC API on a real Unix
// socket, and a client connected to it.
type daemon struct {
	sup    *supervisor.Supervisor
	client mcpdv1.McpdClient
	conn   *grpc.ClientConn
	path   string
}

// startDaemon runs mcpd's components for one test or benchmark; everything,
// children included, is stopped when it ends.
func startDaemon(tb testing.TB, log *zap.Logger, opts supervisor.Options) *daemon {
	tb.Helper()
	dir, err := os.MkdirTemp("", "mcpd-cache-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s", "mcpd.sock")
	ln, err := socket.Listen(path)
	if err != nil {
		tb.Fatal(err)
	}
	opts.Logger = log
	sup := supervisor.New(opts)
	srv := core.New(sup, core.Options{Logger: log, SocketPath: path})
	gs := api.NewGRPCServer(srv, log)
	ctx, cancel := context.WithCancel(context.Background())
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }()
	conn, err := apiclient.Dial(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
		if err := <-served; err != nil {
			tb.Errorf("Serve: %v", err)
		}
		pids := []int{}
		for _, st := range sup.Status() {
			if st.Pid > 0 {
				pids = append(pids, st.Pid)
			}
		}
		cancel()
		if err := <-supDone; err != nil {
			tb.Errorf("supervisor: %v", err)
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				tb.Errorf("child %d still exists after shutdown", pid)
			}
		}
	})
	return &daemon{sup: sup, client: mcpdv1.NewMcpdClient(conn), conn: conn, path: path}
}

func (d *daemon) listTools(tb testing.TB, server string) *mcpdv1.ServerList {
	tb.Helper()
	resp, err := d.client.ListTools(context.Background(), &mcpdv1.ListToolsRequest{Server: server})
	if err != nil {
		tb.Fatalf("ListTools %s: %v", server, err)
	}
	if len(resp.GetServers()) != 1 || resp.GetServers()[0].GetError() != nil {
		tb.Fatalf("ListTools %s: %v", server, resp)
	}
	return resp.GetServers()[0]
}

func (d *daemon) callTool(t *testing.T, server, tool, args string) string {
	t.Helper()
	stream, err := d.client.CallTool(context.Background(), &mcpdv1.CallToolRequest{Server: server, Tool: tool, ArgumentsJson: args})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			t.Fatalf("%s: no response", tool)
		}
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if r := ev.GetResponse(); r != nil {
			if r.GetError() != nil {
				t.Fatalf("%s: %v", tool, r.GetError())
			}
			return firstText(t, json.RawMessage(r.GetResultJson()))
		}
	}
}

// recvCount counts the "recv <method>" lines the go-sdk test server (whose
// transport is wrapped to log every request it reads) wrote to stderr.
func (d *daemon) recvCount(t *testing.T, server, method string) int {
	t.Helper()
	resp, err := d.client.GetLogs(context.Background(), &mcpdv1.GetLogsRequest{Name: server, Lines: 10000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range resp.GetLines() {
		if l.GetText() == "recv "+method || strings.HasPrefix(l.GetText(), "recv "+method+" ") {
			n++
		}
	}
	return n
}

func (d *daemon) cacheStats(t *testing.T, server string) *mcpdv1.CacheStats {
	t.Helper()
	st, err := d.client.GetStatus(context.Background(), &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.GetServers() {
		if s.GetName() == server {
			return s.GetCache()
		}
	}
	t.Fatalf("no server %q in status", server)
	return nil
}

// TestCacheAPIGoSDK drives the go-sdk server (legacy era: it promises
// tools/list_changed) through the real socket: 50 apps on a cold cache cost
// one tools/list; list_changed makes the next list go upstream and return
// the new list, never a stale one; restart empties the cache; reads come
// back byte for byte; cache clear works.
func TestCacheAPIGoSDK(t *testing.T) {
	changed := make(chan struct{}, 16)
	d := startDaemon(t, zaptest.NewLogger(t), supervisor.Options{
		Specs: []supervisor.Spec{
			{Name: "g", Command: gosdkBin, Protocol: session.ProtocolLegacy},
			{Name: "always", Command: gosdkBin, Protocol: session.ProtocolLegacy, Cache: "always"},
		},
		// Called after the cache observed the notification: from here on
		// no app may read the old list.
		OnNotification: func(server string, n session.Notification) {
			if server == "g" && n.Method == "notifications/tools/list_changed" {
				changed <- struct{}{}
			}
		},
	})
	if _, err := d.client.StartServer(context.Background(), &mcpdv1.StartServerRequest{Name: "g"}); err != nil {
		t.Fatal(err)
	}

	t.Run("fifty cold lists, one upstream", func(t *testing.T) {
		const n = 50
		var wg sync.WaitGroup
		lists := make([]*mcpdv1.ServerList, n)
		for i := range n {
			wg.Go(func() {
				// Each app is its own connection with its own name.
				conn, err := apiclient.Dial(d.path)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				resp, err := mcpdv1.NewMcpdClient(conn).ListTools(context.Background(), &mcpdv1.ListToolsRequest{
					Server:  "g",
					Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: fmt.Sprintf("ide-%d", i), Version: "1"}},
				})
				if err != nil {
					t.Error(err)
					return
				}
				lists[i] = resp.GetServers()[0]
			})
		}
		wg.Wait()
		fetched := 0
		for _, l := range lists {
			if l == nil {
				t.FailNow()
			}
			if l.GetCache() == mcpdv1.CacheStatus_CACHE_STATUS_FETCHED {
				fetched++
			}
			if l.GetItemsJson() != lists[0].GetItemsJson() {
				t.Fatalf("lists differ:\n%s\n%s", l.GetItemsJson(), lists[0].GetItemsJson())
			}
		}
		if fetched != 1 {
			t.Fatalf("%d responses were fetched, want 1", fetched)
		}
		if got := d.callTool(t, "g", "count", "{}"); got != "1" {
			t.Fatalf("the server counted %s tools/list, want 1", got)
		}
		if got := d.recvCount(t, "g", "tools/list"); got != 1 {
			t.Fatalf("the server read %d tools/list, want 1", got)
		}
		if st := d.cacheStats(t, "g"); st.GetMisses() != 1 || st.GetHits()+st.GetCoalesced() != n-1 || st.GetEntries() != 1 {
			t.Fatalf("cache stats %v", st)
		}
	})

	t.Run("list_changed", func(t *testing.T) {
		before := d.listTools(t, "g")
		if before.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT || strings.Contains(before.GetItemsJson(), "fresh_tool") {
			t.Fatalf("before: %v", before)
		}
		d.callTool(t, "g", "add_tool", `{"name":"fresh_tool"}`)
		<-changed // the notification has been delivered
		after := d.listTools(t, "g")
		if after.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED || !strings.Contains(after.GetItemsJson(), `"fresh_tool"`) {
			t.Fatalf("after list_changed: %v", after)
		}
		again := d.listTools(t, "g")
		if again.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT || again.GetItemsJson() != after.GetItemsJson() {
			t.Fatalf("then: %v", again)
		}
		if got := d.callTool(t, "g", "count", "{}"); got != "2" {
			t.Fatalf("the server counted %s tools/list, want 2", got)
		}
	})

	t.Run("reads are byte for byte", func(t *testing.T) {
		read := func() *mcpdv1.McpResponse {
			resp, err := d.client.ReadResource(context.Background(), &mcpdv1.ReadResourceRequest{Server: "always", Uri: "test://a"})
			if err != nil || resp.GetError() != nil {
				t.Fatalf("read: %v %v", resp, err)
			}
			return resp
		}
		first, second := read(), read()
		if first.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED || second.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT {
			t.Fatalf("sources %v, %v", first.GetCache(), second.GetCache())
		}
		// Straight from a second process of the same server, on its own
		// session: what the child writes for this read.
		direct := startPeer(t, gosdkPeer(session.ProtocolLegacy, session.EraLegacy))
		raw := call(t, direct, &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"test://a"}`)})
		if second.GetResultJson() != first.GetResultJson() || second.GetResultJson() != string(raw) {
			t.Fatalf("hit %s\nfetched %s\ndirect %s", second.GetResultJson(), first.GetResultJson(), raw)
		}
		if got := d.recvCount(t, "always", "resources/read"); got != 1 {
			t.Fatalf("the server read %d resources/read, want 1", got)
		}
	})

	t.Run("restart empties the cache", func(t *testing.T) {
		if d.listTools(t, "g").GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT {
			t.Fatal("not cached before the restart")
		}
		if _, err := d.client.RestartServer(context.Background(), &mcpdv1.RestartServerRequest{Name: "g"}); err != nil {
			t.Fatal(err)
		}
		if st := d.cacheStats(t, "g"); st.GetEntries() != 0 || st.GetBytes() != 0 {
			t.Fatalf("cache after restart: %v", st)
		}
		l := d.listTools(t, "g")
		if l.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED || strings.Contains(l.GetItemsJson(), "fresh_tool") {
			t.Fatalf("after restart: %v", l)
		}
		if got := d.callTool(t, "g", "count", "{}"); got != "1" {
			t.Fatalf("the new process counted %s tools/list, want 1", got)
		}
	})

	t.Run("clear", func(t *testing.T) {
		d.listTools(t, "g")
		resp, err := d.client.ClearCache(context.Background(), &mcpdv1.ClearCacheRequest{Server: "g"})
		if err != nil || resp.GetCleared() != 1 {
			t.Fatalf("ClearCache: %v %v", resp, err)
		}
		if d.listTools(t, "g").GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED {
			t.Fatal("served from the cache after clear")
		}
		if _, err := d.client.ClearCache(context.Background(), &mcpdv1.ClearCacheRequest{Server: "nope"}); err == nil {
			t.Fatal("clearing an unknown server succeeded")
		}
	})
}

// TestCacheAPIModernListen: a modern go-sdk server answers ttlMs 0, so
// (with mcpd's own listen turned off: ownlisten_test.go) its lists are asked
// every time until an app's Subscribe makes mcpd keep a listen open that the
// server acknowledged; then they stay cached until the list_changed
// delivered on that listen, which no app can outrun.
func TestCacheAPIModernListen(t *testing.T) {
	d := startDaemon(t, zaptest.NewLogger(t), supervisor.Options{
		Specs:          []supervisor.Spec{{Name: "m", Command: gosdkBin, Protocol: session.ProtocolModern}},
		NoCacheListens: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 2 {
		if l := d.listTools(t, "m"); l.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED {
			t.Fatalf("ttlMs 0 and no listen: %v", l.GetCache())
		}
	}
	read := func() *mcpdv1.McpResponse {
		t.Helper()
		resp, err := d.client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: "m", Uri: "test://a"})
		if err != nil || resp.GetError() != nil {
			t.Fatalf("read: %v %v", resp, err)
		}
		return resp
	}

	subCtx, unsubscribe := context.WithCancel(ctx)
	defer unsubscribe()
	stream, err := d.client.Subscribe(subCtx, &mcpdv1.SubscribeRequest{
		Servers: []string{"m"}, ToolsListChanged: true, ResourceUris: []string{"test://a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := stream.Recv()
	if err != nil || ack.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK {
		t.Fatalf("first event %v, %v", ack, err)
	}
	if a := ack.GetAck().GetServers(); len(a) != 1 || !a[0].GetToolsListChanged() || len(a[0].GetResourceUris()) != 1 {
		t.Fatalf("ack %v", ack.GetAck())
	}
	waitFor(t, "tools/list cached under the acknowledged listen", func() bool {
		return d.listTools(t, "m").GetCache() == mcpdv1.CacheStatus_CACHE_STATUS_HIT
	})
	waitFor(t, "resources/read cached under the acknowledged subscription", func() bool {
		return read().GetCache() == mcpdv1.CacheStatus_CACHE_STATUS_HIT
	})
	next := func(kind mcpdv1.SubscriptionEventKind) {
		t.Helper()
		for {
			ev, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for %v: %v", kind, err)
			}
			if ev.GetKind() == kind {
				return
			}
		}
	}

	d.callTool(t, "m", "add_tool", `{"name":"modern_tool"}`)
	next(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED)
	after := d.listTools(t, "m")
	if after.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED || !strings.Contains(after.GetItemsJson(), `"modern_tool"`) {
		t.Fatalf("after list_changed: %v", after)
	}
	if l := d.listTools(t, "m"); l.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT || l.GetItemsJson() != after.GetItemsJson() {
		t.Fatalf("then: %v", l)
	}

	d.callTool(t, "m", "touch", `{"uri":"test://a"}`)
	next(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED)
	if r := read(); r.GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED {
		t.Fatalf("read after resources/updated: %v", r.GetCache())
	}

	// The last app leaves: the listen ends and the promise with it.
	unsubscribe()
	waitFor(t, "lists no longer kept after the listen ended", func() bool {
		// Twice: the second listing would be a hit if the first were kept.
		if d.listTools(t, "m").GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_FETCHED {
			return false
		}
		return d.listTools(t, "m").GetCache() == mcpdv1.CacheStatus_CACHE_STATUS_FETCHED
	})
}

// startDirect runs a child outside mcpd with mcpd's own transport and
// session, for the side-by-side benchmark.
func startDirect(tb testing.TB, command string, args ...string) *session.Session {
	tb.Helper()
	proc, err := transport.Start(transport.Options{
		Name: "direct", Command: command, Args: args, Stderr: transport.NewRing(0, 0),
		Logger: zap.NewNop(), ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		tb.Fatal(err)
	}
	sess := session.New(proc, session.Options{Server: "direct", Protocol: session.ProtocolLegacy})
	tb.Cleanup(func() {
		proc.Stop()
		sess.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sess.Handshake(ctx); err != nil {
		tb.Fatal(err)
	}
	return sess
}

// BenchmarkCachedToolsList compares, in one run, a cached tools/list of
// server-everything through mcpd (gRPC on a Unix socket, cache hit), the
// same request straight to a server-everything child over stdio, and a bare
// gRPC unary round trip (health Check) on mcpd's socket; each sequentially
// and with 64 concurrent clients. Results: BENCHMARKS.md, section "Cache".
//
//	go test ./internal/testing/compat -run '^$' -bench CachedToolsList -benchtime 2s
func BenchmarkCachedToolsList(b *testing.B) {
	if npmMissing != "" {
		b.Skipf("npm test servers unavailable: %s", npmMissing)
	}
	everything := []string{filepath.Join(repoRoot, everythingJS), "stdio"}
	d := startDaemon(b, zap.NewNop(), supervisor.Options{Specs: []supervisor.Spec{{
		Name: "everything", Command: nodeBin, Args: everything,
		Protocol: session.ProtocolLegacy, ShutdownGrace: 200 * time.Millisecond,
	}}})
	// Warm: the first list starts the child and fills the cache
	// (server-everything promises tools/list_changed). It announces
	// list_changed once or twice right after initialized, each dropping the
	// cached list, so list until a hit.
	deadline := time.Now().Add(30 * time.Second)
	for d.listTools(b, "everything").GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT {
		if time.Now().After(deadline) {
			b.Fatal("tools/list of server-everything never became a cache hit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Logf("tools/list of server-everything: %d bytes", len(d.listTools(b, "everything").GetItemsJson()))
	direct := startDirect(b, nodeBin, everything...)
	health := healthpb.NewHealthClient(d.conn)
	listReq := &mcpdv1.ListToolsRequest{Server: "everything"}
	ctx := context.Background()

	runs := []struct {
		name string
		op   func() error
	}{
		{"mcpd-cached", func() error {
			resp, err := d.client.ListTools(ctx, listReq)
			if err == nil && resp.GetServers()[0].GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT {
				err = fmt.Errorf("not a cache hit: %v", resp.GetServers()[0].GetCache())
			}
			return err
		}},
		{"direct-stdio", func() error {
			resp, err := direct.Call(ctx, &session.Request{Method: "tools/list", Params: json.RawMessage(`{}`)})
			if err == nil && resp.Error != nil {
				err = resp.Error
			}
			return err
		}},
		{"bare-grpc", func() error {
			_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}},
	}
	for _, r := range runs {
		b.Run(r.name+"/seq", func(b *testing.B) {
			for b.Loop() {
				if err := r.op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, r := range runs {
		b.Run(r.name+"/c64", func(b *testing.B) {
			// RunParallel starts parallelism × GOMAXPROCS goroutines.
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := r.op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
