package api

import (
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestRequestCodecAliasesLargeStrings: the server's codec decodes a
// request as proto does, its large strings being views of the received
// message (not copies), small messages and invalid UTF-8 as proto does.
func TestRequestCodecAliasesLargeStrings(t *testing.T) {
	big := `{"pad":"` + strings.Repeat("p", 1<<20) + `"}`
	c := newRequestCodec()
	for _, want := range []*mcpdv1.CallToolRequest{
		{Server: "s", Tool: "echo", ArgumentsJson: `{"a":1}`, Options: &mcpdv1.CallOptions{TimeoutMs: 5}},
		{Server: "s", Tool: "echo", ArgumentsJson: big, MetaJson: `{"progressToken":1}`, InputResponsesJson: big, Options: &mcpdv1.CallOptions{TimeoutMs: 5}},
	} {
		wire, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		// Frames as grpc-go delivers them: several buffers.
		var data mem.BufferSlice
		for b := wire; len(b) > 0; {
			n := min(len(b), 16<<10)
			data = append(data, mem.SliceBuffer(b[:n]))
			b = b[n:]
		}
		got := &mcpdv1.CallToolRequest{}
		allocs := float64(allocatedBytes(func() {
			got = &mcpdv1.CallToolRequest{}
			if err := c.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
		}))
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
		if len(wire) > 1<<20 && allocs > 1.2*float64(len(wire)) {
			t.Errorf("decoding %d bytes allocated %.0f: want the message once, its strings views of it", len(wire), allocs)
		}
	}
	bad, _ := proto.Marshal(&mcpdv1.CallToolRequest{Server: "s", ArgumentsJson: strings.Repeat("p", 1<<17)})
	bad[len(bad)-1] = 0xff // invalid UTF-8 in the large string
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &mcpdv1.CallToolRequest{}); err == nil {
		t.Error("invalid UTF-8 in a large string field: no error")
	}
}

// allocatedBytes returns the fewest bytes one run of f allocated, over a
// few runs (a background allocation only ever adds to a run).
func allocatedBytes(f func()) uint64 {
	best := ^uint64(0)
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}
