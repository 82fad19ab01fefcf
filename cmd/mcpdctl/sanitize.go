package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Everything mcpdctl prints for a human that comes from a child server (its
// stderr, serverInfo, tools, results, errors), an app (its name) or mcpd
// passes through sanitize or sanitizeText on its way out, so that no such
// text can send the terminal an escape sequence (retitle the window, rewrite
// the screen, hide what it prints). --json output is exact instead:
// encoding/json and protojson escape control characters themselves.

// sanitize returns s safe to print on one line of a terminal: every C0
// control (tab and newline too), DEL and each byte of invalid UTF-8 is shown
// as \xNN (ESC as \x1b), each C1 control (U+0080 to U+009F) as \u00NN;
// printable text, UTF-8 included, is kept as is.
func sanitize(s string) string { return escapeControls(s, false) }

// sanitizeText is sanitize for text that is printed as it is, on several
// lines (a tool's text result, a log line, an error): newline and tab are
// kept, and a carriage return right before a newline.
func sanitizeText(s string) string { return escapeControls(s, true) }

func escapeControls(s string, text bool) string {
	if !needsEscape(s, text) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keep(s, i, r, text):
			b.WriteString(s[i : i+size])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default: // C1
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// keep reports whether the rune r at s[i] is printed as it is.
func keep(s string, i int, r rune, text bool) bool {
	switch {
	case r < 0x20:
		return text && (r == '\n' || r == '\t' || r == '\r' && strings.HasPrefix(s[i+1:], "\n"))
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return false
	}
	return true
}

// needsEscape reports whether escapeControls would change s.
func needsEscape(s string, text bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || !keep(s, i, r, text) {
			return true
		}
		i += size
	}
	return false
}
