package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The headline of BENCHMARKS.md lies between these markers; a full run
// with -headline FILE rewrites what is between them from its report.
const (
	headlineBegin = "<!-- headline:begin (make bench writes this part) -->"
	headlineEnd   = "<!-- headline:end -->"
)

// errNoMarkers is -headline's error for a file without the markers.
var errNoMarkers = errors.New("no headline markers (" + headlineBegin + " … " + headlineEnd + ")")

// headlineSpan is where the generated text goes in doc: the bytes between
// the end of the begin marker's line and the start of the end marker.
func headlineSpan(doc []byte) (from, to int, err error) {
	b := bytes.Index(doc, []byte(headlineBegin))
	e := bytes.Index(doc, []byte(headlineEnd))
	if b < 0 || e < 0 || e < b {
		return 0, 0, errNoMarkers
	}
	from = b + len(headlineBegin)
	if nl := bytes.IndexByte(doc[from:], '\n'); nl >= 0 {
		from += nl + 1
	}
	return from, e, nil
}

// checkHeadlineFile fails before a run that could not write its headline.
func checkHeadlineFile(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("-headline: %w", err)
	}
	if _, _, err := headlineSpan(doc); err != nil {
		return fmt.Errorf("-headline %s: %w", path, err)
	}
	return nil
}

// runInfo is what the headline says of the run besides its figures.
type runInfo struct {
	Commit string    // short commit of the tree measured, "" when unknown
	Dirty  bool      // the tree had uncommitted changes
	When   time.Time // the run's end
}

// currentRun describes the run ending now, from git when it is there.
func currentRun() runInfo {
	ri := runInfo{When: time.Now().UTC()}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		ri.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		ri.Dirty = len(bytes.TrimSpace(out)) > 0
	}
	return ri
}

// renderHeadline is the headline of a full run: when, where, and each
// target beside this run's figure.
func renderHeadline(r *report, ri runInfo) string {
	var b strings.Builder
	commit := "an unknown commit"
	if ri.Commit != "" {
		commit = "commit `" + ri.Commit + "`"
		if ri.Dirty {
			commit += " with uncommitted changes"
		}
	}
	m := r.Machine
	fmt.Fprintf(&b, "**Run:** `make bench` (%d rounds, %d sequential calls per variant per round) at %s, finished %s UTC.\n",
		r.Rounds, r.Iterations, commit, ri.When.Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, "**Machine:** %d vCPUs (%s), %s RAM, Linux %s, %s", m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion)
	if m.Node != "" {
		fmt.Fprintf(&b, ", Node.js %s", m.Node)
	}
	fmt.Fprintf(&b, "; load average at the start %s.\n\n", m.Load)
	if len(r.Fleet) > 0 {
		b.WriteString("What users quote, N apps (hosts) each using the same npm servers: each app with its own copy of every server, as hosts run them today, against mcpd running one copy of each for all of them.\n\n")
		b.WriteString(fleetTable(r.Fleet))
		b.WriteString("\n")
	}
	b.WriteString("| target | goal | this run | met |\n|---|---|---|---|\n")
	missed := 0
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "**no**"
			missed++
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f %s | %s |\n", mdCell(t.Name), mdCell(t.Target), t.Value, mdCell(t.Unit), met)
	}
	fmt.Fprintf(&b, "\n%d of %d targets met.\n", len(r.Targets)-missed, len(r.Targets))
	return b.String()
}

// mdCell keeps s inside one Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeHeadline replaces the headline in the file at path with text,
// leaving every other byte; the file is replaced whole (a reader never
// sees half of it).
func writeHeadline(path, text string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	from, to, err := headlineSpan(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var out bytes.Buffer
	out.Write(doc[:from])
	out.WriteString(text)
	out.Write(doc[to:])
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".headline-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
