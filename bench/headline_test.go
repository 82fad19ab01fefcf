package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A full run's headline replaces what is between the markers and leaves
// every other byte of the file.
func TestWriteHeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	before := "# title\n\nprose\n\n" + headlineBegin + "\nold table\n" + headlineEnd + "\n\nmore prose\n"
	if err := os.WriteFile(path, []byte(before), 0o640); err != nil {
		t.Fatal(err)
	}
	r := &report{Rounds: 5, Iterations: 2000,
		Machine: machine{CPUs: 2, CPUModel: "EPYC", MemTotal: "24 GB", Kernel: "6.18", GoVersion: "go1.26", Load: "1.0 1.0 1.0"},
		Targets: []targetCheck{
			{Name: "cached list CPU", Target: "≤ 0.7× bare", Value: 0.49, Unit: "×", Met: true},
			{Name: "throughput | 64 apps", Target: "≥ 1.0×", Value: 0.98, Unit: "×", Met: false},
		}}
	text := renderHeadline(r, runInfo{Commit: "abc1234", When: time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)})
	if err := writeHeadline(path, text); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# title\n\nprose\n\n" + headlineBegin + "\n" + text + headlineEnd + "\n\nmore prose\n"
	if string(got) != want {
		t.Fatalf("file after the rewrite:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range []string{"commit `abc1234`", "2026-12-07 09:30", `throughput \| 64 apps`, "| **no** |", "1 of 2 targets met"} {
		if !strings.Contains(text, s) {
			t.Errorf("headline lacks %q:\n%s", s, text)
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode after the rewrite: %v (%v), want 0640", info.Mode(), err)
	}
	// A second run replaces the first one's headline, not adds to it.
	if err := writeHeadline(path, "new\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); strings.Contains(string(got), "abc1234") || !strings.Contains(string(got), headlineBegin+"\nnew\n"+headlineEnd) {
		t.Errorf("second rewrite:\n%s", got)
	}
}

// A file without the markers is refused before the run, and not written.
func TestHeadlineNeedsMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkHeadlineFile(path); !errors.Is(err, errNoMarkers) {
		t.Errorf("checkHeadlineFile: %v, want the missing markers", err)
	}
	if err := writeHeadline(path, "x\n"); !errors.Is(err, errNoMarkers) {
		t.Errorf("writeHeadline: %v, want the missing markers", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "no markers\n" {
		t.Errorf("file changed: %q", got)
	}
	if _, err := parseOptions([]string{"-smoke", "-headline", path}, &strings.Builder{}); err == nil {
		t.Error("-headline with -smoke was accepted")
	}
}

// The repository's BENCHMARKS.md has the markers make bench needs.
func TestBenchmarksFileHasHeadlineMarkers(t *testing.T) {
	if err := checkHeadlineFile(filepath.Join("..", "BENCHMARKS.md")); err != nil {
		t.Fatal(err)
	}
}
