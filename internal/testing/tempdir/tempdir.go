// Package tempdir gives tests a fresh directory whose path is short
// enough for a Unix socket inside it (paths.MaxSocketPathLen), whatever
// the test's name: t.TempDir's paths, under the test's name, can be too
// long.
package tempdir

import (
	"os"
	"testing"
)

// Short returns a fresh directory under the system's temporary directory,
// removed when the test ends.
func Short(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
