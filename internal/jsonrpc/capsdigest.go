package jsonrpc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
