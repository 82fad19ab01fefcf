package main

import "testing"

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain", "echo 1.2.3", "echo 1.2.3", "echo 1.2.3"},
		{"utf8", "héllo wörld ✓ 日本 \ufffd", "héllo wörld ✓ 日本 \ufffd", "héllo wörld ✓ 日本 \ufffd"},
		{"csi", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"osc_title", "\x1b]0;owned\x07", `\x1b]0;owned\x07`, `\x1b]0;owned\x07`},
		{"tab_newline", "a\tb\nc", `a\x09b\x0ac`, "a\tb\nc"},
		{"carriage_return", "a\rb\r\n", `a\x0db\x0d\x0a`, "a\\x0db\r\n"},
		{"nul_del", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`},
		{"c1", "a\u009b31mb\u0085", `a\u009b31mb\u0085`, `a\u009b31mb\u0085`},
		{"invalid_utf8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`},
		{"backslash_kept", `C:\x1b`, `C:\x1b`, `C:\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitize(tt.in); got != tt.line {
				t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := sanitizeText(tt.in); got != tt.text {
				t.Errorf("sanitizeText(%q) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}
