package core

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// answerOne answers the next call sent to h with result and returns its
// params.
func answerOne(h *host, result string) <-chan string {
	got := make(chan string, 1)
	go func() {
		c := (<-h.out).(hostCall)
		h.deliver(c.id, hostAnswer{result: json.RawMessage(result)})
		got <- string(c.params)
	}()
	return got
}

// A url elicitation's completion goes to the host that was sent the
// elicitation, once, and to no other; a declined one, or one of a host
// that left, completes nowhere.
func TestElicitationCompleteRouting(t *testing.T) {
	r := newHostRegistry()
	caps := hostCaps{elicitation: true, elicitationURL: true}
	other := r.register(1, "other", nil, caps)
	asked := r.register(2, "asked", nil, caps)
	params := json.RawMessage(`{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e1"}`)
	complete := json.RawMessage(`{"elicitationId":"e1"}`)
	ctx := context.Background()

	got := answerOne(asked, `{"action":"accept"}`)
	if _, err := r.serve(ctx, "s", methodElicit, params); err != nil {
		t.Fatalf("elicitation: %v", err)
	}
	<-got
	if r.notify(ctx, "t", methodElicitComplete, complete) {
		t.Error("a completion of another server's elicitation was routed")
	}
	if !r.notify(ctx, "s", methodElicitComplete, complete) {
		t.Fatal("the completion reached no host")
	}
	n, ok := (<-asked.out).(hostNotice)
	if !ok || n.server != "s" || n.method != methodElicitComplete || string(n.params) != string(complete) {
		t.Errorf("asked host was sent %+v", n)
	}
	select {
	case m := <-other.out:
		t.Errorf("the other host was sent %v", m)
	default:
	}
	if r.notify(ctx, "s", methodElicitComplete, complete) {
		t.Error("a second completion of the same elicitation was routed")
	}

	got = answerOne(asked, `{"action":"decline"}`)
	if _, err := r.serve(ctx, "s", methodElicit, params); err != nil {
		t.Fatalf("elicitation: %v", err)
	}
	<-got
	if r.notify(ctx, "s", methodElicitComplete, complete) {
		t.Error("the completion of a declined elicitation was routed")
	}

	got = answerOne(asked, `{"action":"accept"}`)
	if _, err := r.serve(ctx, "s", methodElicit, params); err != nil {
		t.Fatalf("elicitation: %v", err)
	}
	<-got
	r.unregister(asked)
	if r.notify(ctx, "s", methodElicitComplete, complete) || len(r.elicits) != 0 || len(r.elicitOrder) != 0 {
		t.Errorf("the completion for a host that left was kept or routed: %v", r.elicits)
	}
	r.unregister(other)
}

// The elicitations awaiting completion are bounded: the oldest is
// forgotten first.
func TestElicitationCompleteBound(t *testing.T) {
	r := newHostRegistry()
	h := r.register(1, "h", nil, hostCaps{elicitation: true, elicitationURL: true})
	for i := range maxOpenElicitations + 1 {
		r.openElicitation(elicitKey{server: "s", id: fmt.Sprint(i)}, h)
	}
	if len(r.elicits) != maxOpenElicitations || len(r.elicitOrder) != maxOpenElicitations {
		t.Fatalf("%d elicitations kept, want %d", len(r.elicits), maxOpenElicitations)
	}
	if r.closeElicitation(elicitKey{server: "s", id: "0"}) != nil {
		t.Error("the oldest elicitation was kept")
	}
	if r.closeElicitation(elicitKey{server: "s", id: fmt.Sprint(maxOpenElicitations)}) != h {
		t.Error("the newest elicitation was forgotten")
	}
	r.unregister(h)
}
