package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// profileBackend is memBackend serving a profile "p" whose servers the
// test changes, with one event channel per Subscribe stream. The second
// stream's Subscribe is slow: it first lets the test act while it opens.
type profileBackend struct {
	memBackend
	mu      sync.Mutex
	servers []string
	streams []chan *service.SubscriptionEvent
	opened  chan int      // the index of each stream Subscribe is opening
	proceed chan struct{} // lets the second Subscribe answer
}

func (p *profileBackend) ListServers(context.Context) (*service.Servers, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := &service.Servers{Profile: &service.Profile{Name: "p", Servers: append([]string(nil), p.servers...)}}
	for _, n := range p.servers {
		resp.Servers = append(resp.Servers, service.ServerStatus{Name: n, Era: "legacy",
			Capabilities: json.RawMessage(`{"tools":{"listChanged":true},"resources":{"subscribe":true}}`), ServerInfo: json.RawMessage(fmt.Sprintf(`{"name":%q,"version":"1"}`, n))})
	}
	return resp, nil
}

func (p *profileBackend) Watch(ctx context.Context, _ service.Watch, send func(service.SubscriptionEvent) error) error {
	p.mu.Lock()
	ch := make(chan *service.SubscriptionEvent, 16)
	p.streams = append(p.streams, ch)
	i := len(p.streams) - 1
	p.mu.Unlock()
	p.opened <- i
	if i == 1 {
		select {
		case <-p.proceed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return deliverEvents(ctx, ch, send)
}

func (p *profileBackend) stream(i int) chan *service.SubscriptionEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams[i]
}

// A bridge of a whole profile whose servers change reopens its stream: the
// host hears of each list change once (the profile's event, not the
// reopen's own as well), and a resources/updated mcpd sends while the new
// stream opens is not lost.
func TestProfileReopenTellsOnceAndLosesNoUpdate(t *testing.T) {
	be := &profileBackend{servers: []string{"s"}, opened: make(chan int, 4), proceed: make(chan struct{})}
	sink := &recordSink{got: make(chan scopedMsg, 64)}
	send, stop := serveHostWith(t, be, sink, Options{All: true, Profile: "p"})
	proceed := sync.OnceFunc(func() { close(be.proceed) })
	defer func() {
		proceed()
		stop()
	}()
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	if m := sink.next(t); m.msg.Result == nil {
		t.Fatalf("initialize answered %s", m.msg.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///x"}}`)
	for m := sink.next(t); m.scope != "2"; m = sink.next(t) {
	}
	waitFor(t, be.opened, "the first stream")
	send(`{"jsonrpc":"2.0","id":"first","method":"tools/list"}`)
	for m := sink.next(t); m.scope != `"first"`; m = sink.next(t) {
	}

	// A reload: the profile gains server t, and its view of s changed.
	be.mu.Lock()
	be.servers = []string{"s", "t"}
	be.mu.Unlock()
	be.stream(0) <- &service.SubscriptionEvent{Server: "s", Synthetic: true, Kind: service.ToolsListChanged}
	waitFor(t, be.opened, "the stream reopened for s and t")
	// While it opens, s's resource changes (mcpd sends it on the stream
	// that is open), and the host hears of the profile's change and lists
	// its tools again.
	be.stream(0) <- &service.SubscriptionEvent{Server: "s", URI: "file:///x", Kind: service.ResourceUpdated}
	counts := map[string]int{}
	told := false
	for deadline := time.After(time.Second); !told; {
		select {
		case m := <-sink.got:
			counts[m.msg.Method+" "+string(m.msg.Params)]++
			told = m.msg.Method == "notifications/tools/list_changed"
		case <-deadline: // not told while the stream reopens
			told = true
		}
	}
	if counts["notifications/tools/list_changed {}"] > 0 {
		send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
		for m := sink.next(t); m.scope != `"list"`; m = sink.next(t) {
			counts[m.msg.Method+" "+string(m.msg.Params)]++
		}
	}
	proceed() // the new stream is open

	// A list change told late would be flushed after listChangedWindow;
	// the ping's answer comes after anything told by then.
	time.Sleep(3 * listChangedWindow)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	for m := sink.next(t); m.scope != "3"; m = sink.next(t) {
		counts[m.msg.Method+" "+string(m.msg.Params)]++
	}
	if n := counts["notifications/tools/list_changed {}"]; n != 1 {
		t.Errorf("host heard %d tools/list_changed, want 1: %v", n, counts)
	}
	if n := counts[`notifications/resources/updated {"uri":"file:///x"}`]; n != 1 {
		t.Errorf("host heard %d updates of file:///x sent while the stream reopened, want 1: %v", n, counts)
	}
}
