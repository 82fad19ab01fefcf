package core

import (
	"context"
	"maps"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// A profile's refusals have classes of their own: a server it does not
// serve (said as an unknown server) and a profile the config lacks.
func TestProfileClasses(t *testing.T) {
	_, err := gateServer(&profile.Profile{Name: "p"}, "x")
	wantClass(t, err, service.NotInProfile, map[string]string{"server": "x", "profile": "p"})
	if got, want := err.Error(), (&supervisor.UnknownServerError{Name: "x"}).Error(); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}

	s := &Service{}
	_, err = s.profileOf(WithProfile(context.Background(), "nosuch"))
	wantClass(t, err, service.UnknownProfile, map[string]string{"profile": "nosuch"})
}

// wantClass fails unless err is the service's error of class c with
// metadata md.
func wantClass(t *testing.T, err error, c service.Class, md map[string]string) {
	t.Helper()
	e := service.ErrorOf(ToError(err))
	if e == nil || e.Class != c || !maps.Equal(e.Metadata, md) {
		t.Fatalf("error %v: %+v, want class %s with %v", err, e, c, md)
	}
}
