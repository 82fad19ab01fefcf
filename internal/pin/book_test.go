package pin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const listV1 = `[{"name":"echo","description":"echoes","inputSchema":{"type":"object"}},{"name":"add","description":"adds","inputSchema":{"type":"object"},"_meta":{"x":1}}]`

func TestDigestIgnoresKeyOrderAndUnpinnedMembers(t *testing.T) {
	_, a, err := ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{}},"description":"d","_meta":{"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ := ParseTool(json.RawMessage(`{ "description": "d", "name": "t", "inputSchema": {"properties": {}, "type": "object"}, "icons": [] }`))
	if a.Digest != b.Digest {
		t.Fatalf("digests differ: %s %s", a.Text, b.Text)
	}
	_, c, _ := ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{}},"description":"D"}`))
	if c.Digest == a.Digest || strings.Join(ChangedMembers(a, c), ",") != "description" {
		t.Fatalf("changed description not seen: %v", ChangedMembers(a, c))
	}
}

func TestBookEnforceWithholdsThenApproves(t *testing.T) {
	store := NewStore(t.TempDir())
	b := NewBook(store)
	obs, err := b.Observe("s", ModeEnforce, 10, json.RawMessage(listV1))
	if err != nil || !obs.FirstPin || string(obs.Items) != listV1 {
		t.Fatalf("first sight: %+v %v", obs, err)
	}
	changed := `[{"name":"echo","description":"EVIL","inputSchema":{"type":"object"}},{"name":"add","description":"adds","inputSchema":{"type":"object"}},{"name":"new","description":"n"}]`
	obs, err = b.Observe("s", ModeEnforce, 10, json.RawMessage(changed))
	if err != nil || !obs.New || len(obs.Changes) != 2 {
		t.Fatalf("changed: %+v %v", obs, err)
	}
	var items []struct{ Name string }
	json.Unmarshal(obs.Items, &items)
	if len(items) != 1 || items[0].Name != "add" {
		t.Fatalf("served %s, want only add", obs.Items)
	}
	_, err = b.Check("s", ModeEnforce, 10, "echo")
	var we *WithheldError
	if !errors.As(err, &we) || !errors.Is(err, ErrWithheld) || !strings.Contains(err.Error(), "mcpdctl tools diff s") {
		t.Fatalf("check echo: %v", err)
	}
	if need, _ := b.Check("s", ModeEnforce, 11, "add"); !need {
		t.Fatal("a new pid must need a list")
	}
	if _, err := b.Approve("s", []string{"nope"}); err == nil {
		t.Fatal("approving a tool without a change succeeded")
	}
	if got, err := b.Approve("s", []string{"echo"}); err != nil || len(got) != 1 {
		t.Fatalf("approve: %v %v", got, err)
	}
	if _, err := b.Check("s", ModeEnforce, 10, "echo"); err != nil {
		t.Fatalf("approved echo refused: %v", err)
	}
	// A new book on the same store knows the approval.
	b2 := NewBook(store)
	obs, _ = b2.Observe("s", ModeWarn, 1, json.RawMessage(changed))
	if len(obs.Changes) != 1 || obs.Changes[0].Tool != "new" || obs.Changes[0].Kind != KindAdded {
		t.Fatalf("after reload: %+v", obs.Changes)
	}
	if string(obs.Items) != changed {
		t.Fatal("warn must serve the list as it is")
	}
}

func TestFilterPage(t *testing.T) {
	b := NewBook(NewStore(t.TempDir()))
	b.Observe("s", ModeEnforce, 1, json.RawMessage(listV1))
	page, err := b.FilterPage("s", ModeEnforce, json.RawMessage(`{"tools":[{"name":"echo","description":"EVIL"},{"name":"add","description":"adds","inputSchema":{"type":"object"}}],"nextCursor":"c"}`))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Tools      []struct{ Name string }
		NextCursor string
	}
	json.Unmarshal(page, &p)
	if len(p.Tools) != 1 || p.Tools[0].Name != "add" || p.NextCursor != "c" {
		t.Fatalf("page %s", page)
	}
}
