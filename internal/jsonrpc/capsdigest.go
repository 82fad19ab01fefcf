package jsonrpc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// digests remembers the digests of the declarations seen lately: a host
// sends the same one on every request, and the digest is on the path of
// every cached answer. Bounded: emptied when full.
var digests struct {
	mu sync.Mutex
	m  map[string]string
}

const (
	maxDigests        = 1024
	maxRememberedCaps = 4096 // bytes of a declaration worth remembering
)

// CapsDigest is the digest of a ClientCapabilities object: a hash of
// its canonical form (members sorted at every depth, no spaces), so that
// two declarations that differ only in member order or spacing share one.
// Absent, null and {} are the same declaration, "none". Every member
// counts, extensions and their settings included: what a server shapes its
// answers by is the server's business, and a digest of less would let one
// host be served a result shaped for another (mcpd's cache keys on it). Text that is not a JSON object hashes as it is.
func CapsDigest(caps json.RawMessage) string {
	p := bytes.TrimSpace(caps)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) || bytes.Equal(p, []byte("{}")) {
		return "none"
	}
	if len(p) <= maxRememberedCaps {
		digests.mu.Lock()
		d, ok := digests.m[string(p)]
		digests.mu.Unlock()
		if ok {
			return d
		}
		d = capsDigest(p)
		digests.mu.Lock()
		if digests.m == nil || len(digests.m) >= maxDigests {
			digests.m = make(map[string]string, 64)
		}
		digests.m[string(p)] = d
		digests.mu.Unlock()
		return d
	}
	return capsDigest(p)
}

// capsDigest is CapsDigest of a declaration that is not empty.
func capsDigest(p []byte) string {
	var v any
	canon := p
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber() // numbers kept as written
	if err := dec.Decode(&v); err == nil {
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			return "none"
		}
		// encoding/json writes map members sorted, at every depth.
		if b, err := json.Marshal(v); err == nil {
			canon = b
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:12])
}
