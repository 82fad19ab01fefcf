package subscriptions

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// A stream's task URIs go into the modern child's listen filter as
// taskIds, those of its own server only, apart from the resource URIs;
// the child's task statuses reach the stream.
func TestTaskURIsInListenFilter(t *testing.T) {
	child := &sessionChild{instantChild: instantChild{done: make(chan struct{})}}
	m := New(Options{Source: oneChildSource{child}})
	defer m.Close()
	mine, other := TaskURI("s", "t1"), TaskURI("elsewhere", "t2")
	st, acks, err := m.Subscribe(context.Background(), AppInfo{},
		Watch{Servers: []string{"s"}, TaskStatus: true, URIs: []string{"r://a", mine, other}})
	if err != nil || len(acks) != 1 {
		t.Fatalf("subscribe: %v %+v", err, acks)
	}
	defer st.Close()
	if want := []string{mine, "r://a"}; !slices.Equal(acks[0].URIs, want) {
		t.Errorf("acknowledged %v, want %v", acks[0].URIs, want)
	}
	child.mu.Lock()
	l := child.reg
	child.mu.Unlock()
	if l == nil {
		t.Fatal("no listen on the child")
	}
	if !slices.Equal(l.filter.TaskIDs, []string{"t1"}) || !slices.Equal(l.filter.ResourceSubscriptions, []string{"r://a"}) {
		t.Fatalf("listen filter %+v, want taskIds [t1] and resourceSubscriptions [r://a]", l.filter)
	}
	l.onNotify("notifications/tasks/status", json.RawMessage(`{"taskId":"t1","status":"working"}`))
	buf, _ := st.Take(nil)
	if !slices.ContainsFunc(buf, func(ev *Event) bool {
		return ev.Kind == KindTaskStatus && string(ev.Params) == `{"taskId":"t1","status":"working"}`
	}) {
		t.Errorf("events %+v, want the task's status", buf)
	}
	if !IsTaskURI(mine) || IsTaskURI("r://a") {
		t.Error("IsTaskURI")
	}
}
