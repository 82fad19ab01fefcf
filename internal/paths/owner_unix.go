//go:build unix

package paths

import (
	"os"
	"syscall"
)

// fileOwner returns the uid owning fi, and whether it could be determined.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
