package main

import (
	"context"
	"strings"
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// BenchmarkHotPathListToolsCached is a cached tools/list as the bridge asks
// for it (naming its host), in one process with its gRPC client.
func BenchmarkHotPathListToolsCached(b *testing.B) {
	for _, mode := range []string{"modern,quiet", "legacy,quiet"} {
		b.Run(strings.Split(mode, ",")[0], func(b *testing.B) {
			c := inProcess(b, mode)
			ctx := context.Background()
			req := &mcpdv1.ListToolsRequest{Server: "fake", Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: "host (mcpdctl bridge)", Version: "1"}}}
			for range 2 { // the second is a cache hit
				if _, err := c.ListTools(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := c.ListTools(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if s := resp.GetServers(); len(s) != 1 || s[0].GetCache() != mcpdv1.CacheStatus_CACHE_STATUS_HIT {
					b.Fatalf("not a cache hit: %v", resp)
				}
			}
		})
	}
}
