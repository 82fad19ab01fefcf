package api

import (
	"context"
	"unsafe"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ClearCache drops the cached results of one server, or of every server
// when none is named.
func (s *Server) ClearCache(ctx context.Context, req *mcpdv1.ClearCacheRequest) (*mcpdv1.ClearCacheResponse, error) {
	n, err := s.svc.ClearCache(req.GetServer())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ClearCacheResponse{Cleared: int64(n)}, nil
}

// resultString returns b as a string without copying it. b must never be
// modified afterwards: it is a child's result or a merged list, which the
// session and the cache hand out read-only (a cache hit returns the same
// bytes to every caller). Saving the copy matters on the hot path of
// cached lists, which are often tens of KiB.
func resultString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// stringBytes returns the bytes of s without copying them; they must never
// be modified. A request's JSON fields reach the session this way: it and
// the supervisor only read params (they copy them into the message for the
// child), and the request message keeps s alive as long as the call.
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
