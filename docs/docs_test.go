// Package docs holds the tests of the documentation: that the architecture
// page names every package directory, that README.md stays short and keeps
// the test command CI runs, and that every relative link resolves.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this directory.
const root = ".."

// TestArchitectureNamesEveryPackage fails when a directory under internal/
// or cmd/ holding Go files is not named, in backquotes, on
// docs/architecture.md.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	arch, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range goDirs(t, "internal", "cmd") {
		if !strings.Contains(string(arch), "`"+dir+"`") {
			t.Errorf("docs/architecture.md does not name %s: add it to the package map with its purpose", dir)
		}
	}
}

// goDirs lists the directories under tops (relative to the root, slash
// separated) that hold at least one .go file.
func goDirs(t *testing.T, tops ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") {
				return nil
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if !seen[rel] {
				seen[rel] = true
				dirs = append(dirs, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no Go directories found under", tops)
	}
	return dirs
}

// maxReadmeLines is how long README.md may grow: the manual lives in docs/.
const maxReadmeLines = 300

func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move reference material to a page under docs/ and link it", n, maxReadmeLines)
	}
}

// TestReadmeTestCommand keeps the quickstart's test command, which CI
// (.ci/run) runs as the README gives it.
func TestReadmeTestCommand(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"    make run", "    make test"} {
		if !hasLine(string(data), line) {
			t.Errorf("README.md's quickstart lost the command %q", strings.TrimSpace(line))
		}
	}
}

func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestRelativeLinks checks every relative link of the Markdown pages of the
// repository (outside node_modules): its file exists and, when it names an
// anchor in a Markdown file, that file has a heading with that anchor.
func TestRelativeLinks(t *testing.T) {
	var pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := headingAnchors(t, page)
		anchors[page] = a
		return a
	}
	for _, page := range pages {
		for _, l := range pageLinks(t, page) {
			target, frag, _ := strings.Cut(l.dest, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: link %q: %v", rel(page), l.line, l.dest, err)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", rel(page), l.line, l.dest, rel(file), frag)
			}
		}
	}
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

type link struct {
	dest string
	line int
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// pageLinks returns the relative links of a Markdown page, outside fenced
// code blocks and inline code.
func pageLinks(t *testing.T, page string) []link {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []link
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(line), -1) {
			dest := m[1]
			if strings.Contains(dest, "://") || strings.HasPrefix(dest, "mailto:") {
				continue
			}
			out = append(out, link{dest: dest, line: n})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stripCode blanks the inline code spans of a line.
func stripCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			b.WriteRune(r)
			continue
		}
		if in {
			b.WriteRune(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of a page:
// lower case, punctuation dropped, spaces as hyphens, -1, -2… for repeats.
func headingAnchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	count := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := slugify(text)
		if n := count[slug]; n > 0 {
			out[slug+"-"+itoa(n)] = true
		} else {
			out[slug] = true
		}
		count[slug]++
	}
	return out
}

func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
