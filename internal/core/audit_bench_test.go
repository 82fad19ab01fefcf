package core

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// BenchmarkAuditCall is the audit record of one echo call, written to a
// file: what the audit log adds to a call's CPU.
func BenchmarkAuditCall(b *testing.B) {
	l, err := audit.Open(filepath.Join(b.TempDir(), audit.FileName), audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s := New(nil, Options{})
	s.SetAudit(AuditOptions{Log: l})
	req := &session.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"message":"hello"}}`),
		ClientInfo: json.RawMessage(`{"name":"bench-app","version":"1.0"}`)}
	resp := &session.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"hello"}],"isError":false}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.auditCall(ctx, "demo", req, resp, cache.Source(0), nil, time.Now())
	}
}
