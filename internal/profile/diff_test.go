package profile

import (
	"reflect"
	"testing"
)

func TestListChanges(t *testing.T) {
	title := "Read"
	other := "Read a file"
	before := Set{
		"dev": {Name: "dev", Servers: map[string]*Server{
			"fs":  {Tools: Rules{HasAllow: true, Allow: []Glob{MustGlob("read_*")}}},
			"git": {Prompts: Rules{Deny: []Glob{MustGlob("x")}}},
			"web": {Tools: Rules{Overrides: map[string]Override{"get": {Title: &title}}}},
		}},
		"grew":    {Name: "grew", Servers: map[string]*Server{"fs": {}, "gone": {}}},
		"ops":     {Name: "ops", Servers: map[string]*Server{"fs": {}}},
		"removed": {Name: "removed", Servers: map[string]*Server{"fs": {}}},
	}
	after := Set{
		"dev": {Name: "dev", Servers: map[string]*Server{
			// Another allow list: tools change.
			"fs": {Tools: Rules{HasAllow: true, Allow: []Glob{MustGlob("read_*"), MustGlob("stat")}}},
			// The same rules, rebuilt: nothing changes.
			"git": {Prompts: Rules{Deny: []Glob{MustGlob("x")}}},
			// Another override text, and a resource rule: both change.
			"web": {Tools: Rules{Overrides: map[string]Override{"get": {Title: &other}}},
				Resources: Rules{HasAllow: true}},
		}},
		// "new" added to the profile, and "gone" taken out: every list of
		// every server of it, fs's too (its rules are the same).
		"grew":  {Name: "grew", Servers: map[string]*Server{"fs": {}, "new": {Tools: Rules{HasAllow: true}}}},
		"ops":   {Name: "ops", Servers: map[string]*Server{"fs": {Tools: Rules{Deny: []Glob{MustGlob("rm")}}}}},
		"added": {Name: "added", Servers: map[string]*Server{"fs": {Tools: Rules{HasAllow: true}}}},
	}
	want := []ListChange{
		{Profile: "added", Server: "fs", Tools: true, Prompts: true, Resources: true},
		{Profile: "dev", Server: "fs", Tools: true},
		{Profile: "dev", Server: "web", Tools: true, Resources: true},
		{Profile: "grew", Server: "fs", Tools: true, Prompts: true, Resources: true},
		{Profile: "grew", Server: "gone", Tools: true, Prompts: true, Resources: true},
		{Profile: "grew", Server: "new", Tools: true, Prompts: true, Resources: true},
		{Profile: "ops", Server: "fs", Tools: true},
		{Profile: "removed", Server: "fs", Tools: true, Prompts: true, Resources: true},
	}
	if got := ListChanges(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("ListChanges = %+v\nwant %+v", got, want)
	}
	if got := ListChanges(after, after); got != nil {
		t.Errorf("ListChanges of a set with itself = %+v, want none", got)
	}
	if got := ListChanges(nil, after); len(got) != 7 {
		t.Errorf("ListChanges from no profiles = %+v, want every server of every profile", got)
	}
	// Another prefix mode renames tools and prompts, not resources.
	renamed := Set{"ops": {Name: "ops", Prefix: PrefixOnCollision, Servers: after["ops"].Servers}}
	if got, want := ListChanges(Set{"ops": after["ops"]}, renamed), []ListChange{{Profile: "ops", Server: "fs", Tools: true, Prompts: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListChanges of a prefix change = %+v, want %+v", got, want)
	}
}

func TestDiff(t *testing.T) {
	before := Set{"kept": {Name: "kept", Servers: map[string]*Server{"fs": {}}},
		"edited": {Name: "edited", Servers: map[string]*Server{"fs": {}}},
		"gone":   {Name: "gone", Servers: map[string]*Server{"fs": {}}}}
	after := Set{"kept": {Name: "kept", Servers: map[string]*Server{"fs": {}}},
		"edited": {Name: "edited", Prefix: PrefixOnCollision, Servers: map[string]*Server{"fs": {}}},
		"new":    {Name: "new", Servers: map[string]*Server{"fs": {}}}}
	added, removed, changed := Diff(before, after)
	if !reflect.DeepEqual(added, []string{"new"}) || !reflect.DeepEqual(removed, []string{"gone"}) || !reflect.DeepEqual(changed, []string{"edited"}) {
		t.Errorf("Diff = added %v, removed %v, changed %v", added, removed, changed)
	}
}
