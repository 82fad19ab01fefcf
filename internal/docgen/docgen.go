// Package docgen keeps the generated sections of the Markdown pages under
// docs/: a section sits between two HTML comments naming it, the text
// around it is written by hand, and a test of the package that owns the
// table regenerates it and compares (make docs rewrites it). Standard
// library only, so mcpdctl may use it.
package docgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrStale is the class of a section whose text differs from what the code
// generates.
var ErrStale = errors.New("out of date")

// ErrNoSection is the class of a page without the markers of a section.
var ErrNoSection = errors.New("no generated section")

// Regenerate is the command that rewrites every generated section.
const Regenerate = "make docs"

func begin(name string) string {
	return "<!-- BEGIN GENERATED " + name + ": edit the code, then run " + Regenerate + " -->\n"
}

func end(name string) string { return "<!-- END GENERATED " + name + " -->" }

// Splice returns page with the section name's text replaced by body.
func Splice(page []byte, name, body string) ([]byte, error) {
	b, e := []byte(begin(name)), []byte(end(name))
	i := bytes.Index(page, b)
	j := bytes.Index(page, e)
	if i < 0 || j < i+len(b) {
		return nil, fmt.Errorf("%w %s: want the lines %q and %q around it", ErrNoSection, name, strings.TrimSpace(begin(name)), end(name))
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	out := make([]byte, 0, len(page)+len(body))
	out = append(out, page[:i+len(b)]...)
	out = append(out, body...)
	return append(out, page[j:]...), nil
}

// Sync compares the section name of the page at path with body and
// returns an ErrStale error naming the command that regenerates it when
// they differ; with write set it rewrites the page instead.
func Sync(path, name, body string, write bool) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	want, err := Splice(page, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(page, want) {
		return nil
	}
	if write {
		return os.WriteFile(path, want, 0o644)
	}
	return fmt.Errorf("%s: the generated %s is %w: run %s", path, name, ErrStale, Regenerate)
}

// Table renders a Markdown table; a | in a cell is escaped and a newline
// becomes a space.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	row(header)
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		row(r)
	}
	return b.String()
}

// Code returns s in backquotes.
func Code(s string) string { return "`" + s + "`" }
