package core

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
)

func TestHostPick(t *testing.T) {
	r := newHostRegistry()
	a := r.register(1, "a", nil, hostCaps{sampling: true, elicitation: true})
	b := r.register(2, "b", []string{"s"}, hostCaps{sampling: true})
	if got := r.pick("s", methodCreateMessage); got != b {
		t.Errorf("no call in flight: picked %v, want the most recent host", got.name)
	}
	k1 := r.beginCall("s", 1)
	k2 := r.beginCall("s", 1)
	if got := r.pick("s", methodCreateMessage); got != a {
		t.Errorf("a's calls in flight: picked %v, want a", got.name)
	}
	r.endCall(k1)
	if got := r.pick("s", methodCreateMessage); got != a {
		t.Errorf("one of a's calls in flight: picked %v, want a", got.name)
	}
	r.endCall(k2)
	if got := r.pick("s", methodCreateMessage); got != b {
		t.Errorf("a's calls ended: picked %v, want the most recent host", got.name)
	}
	if len(r.flights) != 0 {
		t.Errorf("flights left after the calls ended: %v", r.flights)
	}
	if got := r.pick("s", methodElicit); got != a {
		t.Errorf("elicitation: picked %v, want a (b does not answer it)", got)
	}
	if got := r.pick("other", methodRootsList); got != nil {
		t.Errorf("roots: picked %v, want none", got.name)
	}
	if got := r.pick("other", methodCreateMessage); got != a {
		t.Errorf("server b does not serve: picked %v, want a", got.name)
	}
}

func TestHostServe(t *testing.T) {
	r := newHostRegistry()
	if _, err := r.serve(context.Background(), "s", methodCreateMessage, nil); err == nil || err.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("no host: %v, want -32601", err)
	}
	h := r.register(1, "h", nil, hostCaps{sampling: true})
	done := make(chan struct{})
	go func() { // answers the first call, then leaves while a second one waits
		defer close(done)
		c := (<-h.out).(hostCall)
		h.deliver(c.id, hostAnswer{result: json.RawMessage(`{"model":"m"}`)})
		<-h.out
		r.unregister(h)
	}()
	res, err := r.serve(context.Background(), "s", methodCreateMessage, json.RawMessage(`{}`))
	if err != nil || string(res) != `{"model":"m"}` {
		t.Errorf("answer = %s, %v", res, err)
	}
	if _, err := r.serve(context.Background(), "s", methodCreateMessage, json.RawMessage(`{}`)); err == nil || err.Code != jsonrpc.CodeInternalError {
		t.Errorf("host gone: %v, want an error", err)
	}
	<-done
}

// A roots/list tied to no call is never relayed to a host (a modern one
// could be asked only by parking one of its calls): it is answered from
// the roots the hosts declared, or -32601 so that the supervisor answers
// the config's.
func TestHostServeUnsolicitedRootsList(t *testing.T) {
	r := newHostRegistry()
	h := r.register(1, "h", nil, hostCaps{roots: true})
	ctx := session.WithUnsolicited(context.Background())
	if _, err := r.serve(ctx, "s", methodRootsList, nil); err == nil || err.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("no root declared: %v, want -32601", err)
	}
	r.registerFor(2, "named", hostScope{root: "/work/a b"}, nil, hostCaps{roots: true})
	res, err := r.serve(ctx, "s", methodRootsList, nil)
	if want := `{"roots":[{"uri":"file:///work/a%20b","name":"a b"}]}`; err != nil || string(res) != want {
		t.Errorf("answer = %s, %v; want %s", res, err, want)
	}
	select {
	case m := <-h.out:
		t.Errorf("host was sent %v", m)
	default:
	}
}
