package mcpdv1

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestClientPackagesSayTheKeys checks that the TypeScript and Python client
// packages, which cannot import this package, say mcpd's metadata keys and
// error domain as it does: each says them once, in the file named here.
func TestClientPackagesSayTheKeys(t *testing.T) {
	for file, quote := range map[string]func(string) string{
		"clients/typescript/lib/status.js":      func(k string) string { return "'" + k + "'" },
		"clients/python/mcpd_client/_status.py": strconv.Quote,
	} {
		src, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{MetadataClientName, MetadataClientVersion, MetadataDaemon, ErrorDomain} {
			if !strings.Contains(string(src), quote(key)) {
				t.Errorf("%s does not say %s", file, strconv.Quote(key))
			}
		}
	}
}
