package bridge

import (
	"encoding/json"
	"testing"
)

func TestHostAnswersURLElicitation(t *testing.T) {
	form := json.RawMessage(`{"mode":"form","message":"name?","requestedSchema":{"type":"object"}}`)
	url := json.RawMessage(`{"mode":"url","message":"open","url":"https://example.com","elicitationId":"e"}`)
	tests := []struct {
		name      string
		caps      string
		form, url bool
	}{
		{"none", `{}`, false, false},
		{"empty elicitation: form only", `{"elicitation":{}}`, true, false},
		{"form", `{"elicitation":{"form":{}}}`, true, false},
		{"form and url", `{"elicitation":{"form":{},"url":{}}}`, true, true},
		{"url null", `{"elicitation":{"url":null}}`, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			caps := json.RawMessage(tc.caps)
			if got := hostAnswers(caps, "elicitation/create", form); got != tc.form {
				t.Errorf("form elicitation answered = %v, want %v", got, tc.form)
			}
			if got := hostAnswers(caps, "elicitation/create", url); got != tc.url {
				t.Errorf("url elicitation answered = %v, want %v", got, tc.url)
			}
			if got := flagsOf(caps).elicitURL; got != tc.url {
				t.Errorf("flags elicitURL = %v, want %v", got, tc.url)
			}
		})
	}
	if got := capabilityName("elicitation/create", url); got != "elicitation.url" {
		t.Errorf("capabilityName = %q", got)
	}
	if got := requestKind("elicitation/create", url); got != "elicitation/create (url mode)" {
		t.Errorf("requestKind = %q", got)
	}
}

func TestUIResourceURI(t *testing.T) {
	tests := []struct{ meta, want string }{
		{``, ""},
		{`{"ui":{"resourceUri":"ui://a/b.html","visibility":["model","app"]}}`, "ui://a/b.html"},
		{`{"ui/resourceUri":"ui://flat/x.html"}`, "ui://flat/x.html"},
		{`{"other":{"resourceUri":"x"}}`, ""},
		{`{"ui":{"resourceUri":`, ""},
	}
	for _, tc := range tests {
		if got := uiResourceURI(json.RawMessage(tc.meta)); got != tc.want {
			t.Errorf("uiResourceURI(%s) = %q, want %q", tc.meta, got, tc.want)
		}
	}
}

// In the aggregate a prefixed UI tool keeps its _meta, and its resource
// is routed to the tool's server.
func TestAggregateUIToolRoutesItsResource(t *testing.T) {
	got := []serverItems{
		{server: "a", items: json.RawMessage(`[{"name":"chart","_meta":{"ui":{"resourceUri":"ui://a/chart.html"}}}]`)},
		{server: "b", items: json.RawMessage(`[{"name":"plain"}]`)},
	}
	l, err := nameItems("tools/list", got, true, "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.uiURIs["ui://a/chart.html"] != "a" {
		t.Errorf("uiURIs = %v", l.uiURIs)
	}
	if len(l.items) != 2 || string(l.items[0]) != `{"name":"a__chart","_meta":{"ui":{"resourceUri":"ui://a/chart.html"}}}` {
		t.Errorf("items = %s", l.items)
	}
}
