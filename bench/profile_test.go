package main

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/profile"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// benchProfiles is a profile of the fake server as a user would write it:
// an allow list of globs with a deny list, and an override, so that the
// gate matches globs and the list is filtered and rewritten.
func benchProfiles() profile.Set {
	desc := "Echo the message."
	return profile.Set{"bench": {Name: "bench", Prefix: profile.PrefixAlways, Servers: map[string]*profile.Server{
		"fake": {Tools: profile.Rules{
			HasAllow:  true,
			Allow:     []profile.Glob{profile.MustGlob("get_*"), profile.MustGlob("list_*"), profile.MustGlob("echo")},
			Deny:      []profile.Glob{profile.MustGlob("*_secret"), profile.MustGlob("delete_*")},
			Overrides: map[string]profile.Override{"echo": {Description: &desc}},
		}},
	}}}
}

// BenchmarkHotPathProfile is the cost of profiles on the call path: the
// same CallTool (a round trip to the child) and cached ListTools with no
// profile installed ("off"), with profiles installed but the call under
// none ("installed"), and under a profile that matches globs and filters
// the list ("on").
//
//	go test ./bench -run '^$' -bench HotPathProfile -benchmem
func BenchmarkHotPathProfile(b *testing.B) {
	c, srv := inProcessServer(b, "modern,quiet")
	bg := context.Background()
	under := metadata.AppendToOutgoingContext(bg, mcpdv1.MetadataProfile, "bench")
	if err := callEcho(bg, c, "fake"); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name      string
		installed bool
		ctx       context.Context
	}{
		{"off", false, bg},
		{"installed", true, bg},
		{"on", true, under},
	}
	for _, tc := range cases {
		if tc.installed {
			srv.SetProfiles(benchProfiles())
		} else {
			srv.SetProfiles(nil)
		}
		b.Run("call/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := callEcho(tc.ctx, c, "fake"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("list/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := c.ListTools(tc.ctx, &mcpdv1.ListToolsRequest{Server: "fake"})
				if err != nil || len(r.GetServers()) != 1 || r.GetServers()[0].GetItemsJson() == "" {
					b.Fatalf("list: %v %v", r, err)
				}
			}
		})
	}
}
