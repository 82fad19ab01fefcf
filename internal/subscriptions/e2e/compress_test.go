package e2e

import (
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding/gzip" // registered: mcpd then answers gzip requests with gzip

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// An event fanned out to several streams is encoded once and shared, but
// only among streams whose messages are not compressed: apps that compress
// (gzip, or deflate, which the api package registers) and apps that do not,
// on the same events, all read every event intact.
func TestFanOutToCompressingAndPlainApps(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy,quiet")}})
	req := &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{"fake://hello"}}
	var ws []*watcher
	encodings := []string{gzip.Name, "", "deflate"}
	for i := range 9 {
		var opts []grpc.DialOption
		if e := encodings[i%len(encodings)]; e != "" {
			opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor(e)))
		}
		c, _ := d.dial(opts...)
		w, _ := subscribe(t, c, req, true)
		ws = append(ws, w)
	}
	const events = 20
	for range events {
		d.callTool("s", "changed", `{"uri":"fake://hello"}`)
	}
	for i, w := range ws {
		waitFor(t, fmt.Sprintf("app %d", i), func() bool {
			if _, err := w.snapshot(); err != nil {
				t.Fatalf("app %d (encoding %q): %v", i, encodings[i%len(encodings)], err)
			}
			return w.count(realUpdate("fake://hello")) == events
		})
	}
}
