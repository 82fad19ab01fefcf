//go:build !unix

package paths

import "os"

// fileOwner cannot determine file ownership on this platform; the ownership
// check is skipped there (mcpd targets Linux and other unix systems).
func fileOwner(os.FileInfo) (int, bool) { return 0, false }
