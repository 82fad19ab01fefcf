package main

import (
	"os"
	"syscall"
)

// inode identifies a file across renames (0 when unknown).
func inode(st os.FileInfo) uint64 {
	if st == nil {
		return 0
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
