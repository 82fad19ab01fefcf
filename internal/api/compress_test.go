//lint:file-ignore SA1019 the per-connection compressors are deliberate (see below)

package api

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The clients of these tests compress with grpc-go's per-connection
// compressors (grpc.WithCompressor, deprecated but supported throughout
// 1.x), which are not registered in grpc-go's process-wide encoding
// registry. A registered compressor would be registered for the server of
// this test process too, and would hide that a daemon built without it
// cannot read a compressed message: the situation of an app written with
// grpc-js, grpc-java or the C core that sets a default compression.

// zlibCompressor compresses messages in the "deflate" encoding, as grpc-js
// and the C core write it.
type zlibCompressor struct{}

func (zlibCompressor) Do(w io.Writer, p []byte) error {
	z := zlib.NewWriter(w)
	if _, err := z.Write(p); err != nil {
		return err
	}
	return z.Close()
}

func (zlibCompressor) Type() string { return "deflate" }

// zlibDecompressor reads "deflate" messages.
type zlibDecompressor struct{}

func (zlibDecompressor) Do(r io.Reader) ([]byte, error) {
	z, err := zlib.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return io.ReadAll(z)
}

func (zlibDecompressor) Type() string { return "deflate" }

// countingDecompressor counts the messages it decompressed: the answers
// that came back compressed.
type countingDecompressor struct {
	grpc.Decompressor
	n atomic.Int64
}

func (d *countingDecompressor) Do(r io.Reader) ([]byte, error) {
	d.n.Add(1)
	return d.Decompressor.Do(r)
}

// echoParams answers every call with the request's params as its result.
func echoParams(_ context.Context, _ string, req *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
	return &session.Response{Result: req.WholeParams()}, nil
}

func TestCompressedRequestsAreServed(t *testing.T) {
	for _, tc := range []struct {
		name string
		cp   grpc.Compressor
		dc   grpc.Decompressor
	}{
		{"gzip", grpc.NewGZIPCompressor(), grpc.NewGZIPDecompressor()},
		{"deflate", zlibCompressor{}, zlibDecompressor{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := &countingDecompressor{Decompressor: tc.dc}
			h := newHarness(t, &fakeBackend{call: echoParams}, grpc.WithCompressor(tc.cp), grpc.WithDecompressor(dc))
			ctx := ctxT(t)
			args := `{"text":"` + strings.Repeat("compressible ", 1000) + `"}`

			stream, err := h.client.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: args})
			if err != nil {
				t.Fatal(err)
			}
			evs, err := recvAll(stream)
			if err != nil {
				t.Fatalf("CallTool with %s: %v", tc.name, err)
			}
			var params struct {
				Arguments json.RawMessage `json:"arguments"`
			}
			if len(evs) != 1 || json.Unmarshal([]byte(evs[0].GetResponse().GetResultJson()), &params) != nil || string(params.Arguments) != args {
				t.Fatalf("CallTool events = %v, want one response echoing the arguments", evs)
			}

			resp, err := h.client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: "s", Uri: "x://y"})
			if err != nil {
				t.Fatalf("ReadResource with %s: %v", tc.name, err)
			}
			if want := `{"uri":"x://y"}`; resp.GetResultJson() != want {
				t.Fatalf("ReadResource result = %s, want %s", resp.GetResultJson(), want)
			}
			// Answers use the app's encoding: the stream's response and
			// the unary response.
			if n := dc.n.Load(); n != 2 {
				t.Errorf("%d answers came back in %s, want 2", n, tc.name)
			}
		})
	}
}

func TestDeflateRoundTrip(t *testing.T) {
	c := &deflateCompressor{}
	for i := range 3 { // later rounds reuse a pooled writer
		msg := bytes.Repeat([]byte{'a', byte(i)}, 5000)
		var buf bytes.Buffer
		w, err := c.Compress(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(msg); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := zlibDecompressor{}.Do(bytes.NewReader(buf.Bytes())) // what the app reads
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: app decoded %d bytes (err %v), want the %d sent", i, len(got), err, len(msg))
		}
		r, err := c.Decompress(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: decompressed %d bytes (err %v), want the %d sent", i, len(got), err, len(msg))
		}
	}
}

// Apps may send requests as large as the responses mcpd takes from a
// child (grpc-go's default would refuse anything over 4 MiB); beyond
// that, the call fails with RESOURCE_EXHAUSTED.
func TestRequestSizeLimit(t *testing.T) {
	b := &fakeBackend{call: func(_ context.Context, _ string, req *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
		return &session.Response{Result: json.RawMessage(`{"bytes":` + strconv.Itoa(len(req.WholeParams())) + `}`)}, nil
	}}
	h := newHarness(t, b)
	ctx := ctxT(t)
	// call sends size bytes of arguments and returns how many bytes of
	// params reached the backend.
	call := func(size int) (int, error) {
		args := `{"s":"` + strings.Repeat("x", size) + `"}`
		stream, err := h.client.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "t", ArgumentsJson: args})
		if err != nil {
			return 0, err
		}
		evs, err := recvAll(stream)
		if err != nil {
			return 0, err
		}
		var res struct{ Bytes int }
		if len(evs) != 1 || json.Unmarshal([]byte(evs[0].GetResponse().GetResultJson()), &res) != nil {
			t.Fatalf("events = %v, want one response", evs)
		}
		return res.Bytes, nil
	}

	got, err := call(6 << 20)
	if err != nil {
		t.Fatalf("6 MiB request: %v", err)
	}
	if got < 6<<20 {
		t.Fatalf("6 MiB request: the backend got %d bytes of params", got)
	}
	_, err = call(MaxRequestSize)
	wantCode(t, err, codes.ResourceExhausted, "larger than max")
}
