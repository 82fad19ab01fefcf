package cpuprofile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("MCPD_TEST_CPUPROFILE", "")
	if stop, err := FromEnv("MCPD_TEST_CPUPROFILE"); stop != nil || err != nil {
		t.Fatalf("unset: %v, %v; want nothing", stop != nil, err)
	}
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv("MCPD_TEST_CPUPROFILE", path)
	stop, err := FromEnv("MCPD_TEST_CPUPROFILE")
	if err != nil || stop == nil {
		t.Fatalf("set: %v", err)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v)", path, err, fi)
	}
	t.Setenv("MCPD_TEST_CPUPROFILE", filepath.Join(t.TempDir(), "no", "such", "dir"))
	if _, err := FromEnv("MCPD_TEST_CPUPROFILE"); err == nil {
		t.Fatal("an uncreatable file: no error")
	}
}
