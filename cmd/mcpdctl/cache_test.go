package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ClearCache answers like mcpd: a count for a known server or for all, and
// NOT_FOUND for an unknown one.
func (f *fakeMcpd) ClearCache(_ context.Context, r *mcpdv1.ClearCacheRequest) (*mcpdv1.ClearCacheResponse, error) {
	switch r.GetServer() {
	case "":
		return &mcpdv1.ClearCacheResponse{Cleared: 7}, nil
	case "weather":
		return &mcpdv1.ClearCacheResponse{Cleared: 3}, nil
	}
	return nil, status.Errorf(codes.NotFound, "unknown server %q", r.GetServer())
}

func TestCacheGolden(t *testing.T) {
	tests := []goldenCase{
		{"cache", []string{"cache"}},
		{"cache_json", []string{"cache", "--json"}},
		{"cache_clear", []string{"cache", "clear"}},
		{"cache_clear_one", []string{"cache", "clear", "weather"}},
		{"cache_clear_unknown", []string{"cache", "clear", "nope"}},
		{"cache_bad", []string{"cache", "flush"}},
	}
	runGoldens(t, tests)
}

func TestPrintCacheTable(t *testing.T) {
	var b bytes.Buffer
	err := printCacheTable(&b, []*mcpdv1.ServerStatus{
		{Name: "b", Cache: &mcpdv1.CacheStats{Policy: "30s", Hits: 10, Misses: 2, Coalesced: 49, Entries: 3, Bytes: 4096}},
		{Name: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME  POLICY   HITS  MISSES  COALESCED  ENTRIES  BYTES
b     30s      10    2       49         3        4096
a     default  0     0       0          0        0
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("table (-want +got):\n%s", diff)
	}
}

func TestStatusJSONCache(t *testing.T) {
	got := toServerJSON(&mcpdv1.ServerStatus{Name: "b", Cache: &mcpdv1.CacheStats{Hits: 10, Misses: 2, Coalesced: 49, Entries: 3, Bytes: 4096}})
	want := &cacheJSON{Policy: "default", Hits: 10, Misses: 2, Coalesced: 49, Entries: 3, Bytes: 4096}
	if diff := cmp.Diff(want, got.Cache); diff != "" {
		t.Fatalf("cache (-want +got):\n%s", diff)
	}
	if toServerJSON(&mcpdv1.ServerStatus{Name: "a"}).Cache != nil {
		t.Fatal("cache object without stats")
	}
}
