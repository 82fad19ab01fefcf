package subscriptions

import (
	"context"
	"testing"
)

// ProfileListsChanged reaches only the streams of that profile that watch
// the server and the kinds that changed, each event marked synthetic.
func TestProfileListsChanged(t *testing.T) {
	m := New(Options{Source: downSource{[]string{"a", "b"}}})
	defer m.Close()
	open := func(profile string, w Watch) *Stream {
		t.Helper()
		st, _, err := m.Subscribe(context.Background(), AppInfo{Profile: profile}, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	lists := Watch{Servers: []string{"a"}, ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
	dev := open("dev", lists)
	devToolsOnly := open("dev", Watch{Servers: []string{"a"}, ToolsListChanged: true})
	devOtherServer := open("dev", Watch{Servers: []string{"b"}, ToolsListChanged: true})
	ops := open("ops", lists)
	none := open("", lists)

	m.ProfileListsChanged("dev", "a", true, false, true)

	kinds := func(st *Stream) []Kind {
		evs, _ := st.Take(nil)
		var out []Kind
		for _, ev := range evs {
			if ev.Kind == KindState || ev.Kind == KindError { // the down source's own
				continue
			}
			if !ev.Synthetic || ev.Server != "a" {
				t.Errorf("event %+v: want a synthetic event of server a", ev)
			}
			out = append(out, ev.Kind)
		}
		return out
	}
	if got := kinds(dev); len(got) != 2 || got[0] != KindToolsListChanged || got[1] != KindResourcesListChanged {
		t.Errorf("the profile's stream got %v, want tools and resources list changes", got)
	}
	if got := kinds(devToolsOnly); len(got) != 1 || got[0] != KindToolsListChanged {
		t.Errorf("the profile's tools-only stream got %v, want the tools list change", got)
	}
	for name, st := range map[string]*Stream{"another server's": devOtherServer, "another profile's": ops, "no profile's": none} {
		if got := kinds(st); len(got) != 0 {
			t.Errorf("%s stream got %v, want nothing", name, got)
		}
	}
}
