package docgen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	page := "# T\n\nprose\n" + begin("x") + "old\n" + end("x") + "\nmore prose\n"
	got, err := Splice([]byte(page), "x", "new")
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\nprose\n" + begin("x") + "new\n" + end("x") + "\nmore prose\n"
	if string(got) != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Splice([]byte(page), "y", "new"); !errors.Is(err, ErrNoSection) {
		t.Errorf("Splice of a missing section: %v, want ErrNoSection", err)
	}
}

func TestSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	page := "a\n" + begin("x") + "old\n" + end("x") + "\n"
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Sync(path, "x", "new\n", false)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), Regenerate) {
		t.Fatalf("Sync of a stale section: %v, want ErrStale naming %q", err, Regenerate)
	}
	if err := Sync(path, "x", "new\n", true); err != nil {
		t.Fatal(err)
	}
	if err := Sync(path, "x", "new\n", false); err != nil {
		t.Errorf("Sync after a rewrite: %v", err)
	}
}

func TestTable(t *testing.T) {
	got := Table([]string{"a", "b"}, [][]string{{"x|y", "1\n2"}})
	want := "| a | b |\n|---|---|\n| x\\|y | 1 2 |\n"
	if got != want {
		t.Errorf("Table = %q, want %q", got, want)
	}
}
