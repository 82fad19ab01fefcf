package profile

import (
	"errors"
	"fmt"
	"strings"
)

// Glob is a name pattern of a profile's allow and deny lists: "*" matches
// any run of characters (none, or "/" and "." too), "\*" a literal star and
// "\\" a literal backslash; every other character matches itself. The
// zero Glob matches nothing.
type Glob struct {
	text  string
	parts []string // the literal runs between the stars
	lead  bool     // a star before parts[0]
	trail bool     // a star after the last part
}

// ParseGlob compiles pattern. An empty pattern, and a backslash that
// escapes anything but "*" or "\", are errors.
func ParseGlob(pattern string) (Glob, error) {
	if pattern == "" {
		return Glob{}, errors.New("empty pattern: write a name, or * for every name")
	}
	g := Glob{text: pattern}
	var cur strings.Builder
	star := false // the last thing read was a star
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '*' {
			if cur.Len() > 0 {
				g.parts = append(g.parts, cur.String())
				cur.Reset()
			}
			if len(g.parts) == 0 {
				g.lead = true
			}
			star = true
			continue
		}
		if c == '\\' {
			if i+1 >= len(pattern) || (pattern[i+1] != '*' && pattern[i+1] != '\\') {
				return Glob{}, fmt.Errorf("pattern %q: a backslash escapes only * or \\", pattern)
			}
			i++
			c = pattern[i]
		}
		cur.WriteByte(c)
		star = false
	}
	if cur.Len() > 0 {
		g.parts = append(g.parts, cur.String())
	}
	g.trail = star
	return g, nil
}

// MustGlob is ParseGlob for patterns known to be valid; it panics on error.
func MustGlob(pattern string) Glob {
	g, err := ParseGlob(pattern)
	if err != nil {
		panic(err)
	}
	return g
}

// String is the pattern as written.
func (g Glob) String() string { return g.text }

// Match reports whether name matches the whole pattern.
func (g Glob) Match(name string) bool {
	if g.text == "" {
		return false
	}
	if len(g.parts) == 0 {
		return true // "*"
	}
	if len(g.parts) == 1 && !g.lead && !g.trail {
		return name == g.parts[0]
	}
	parts := g.parts
	if !g.lead {
		if !strings.HasPrefix(name, parts[0]) {
			return false
		}
		name = name[len(parts[0]):]
		parts = parts[1:]
	}
	if !g.trail && len(parts) > 0 {
		last := parts[len(parts)-1]
		if !strings.HasSuffix(name, last) {
			return false
		}
		name = name[:len(name)-len(last)]
		parts = parts[:len(parts)-1]
	}
	// The runs in between match leftmost: any star can absorb the rest.
	for _, p := range parts {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return true
}
