package main

import (
	"fmt"
	"testing"
)

func TestToolNotFound(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("t%02d", i)
	}
	tests := []struct {
		tool  string
		names []string
		want  string
	}{
		{"nope", []string{"b", "a"}, `tool "nope" not found on server "s" (it has: a, b)`},
		{"get-weather", []string{"get_weather", "x"}, `tool "get-weather" not found on server "s"; did you mean "get_weather"?`},
		{"serch", []string{"search", "fetch"}, `tool "serch" not found on server "s"; did you mean "search"?`},
		{"ab", []string{"xy"}, `tool "ab" not found on server "s" (it has: xy)`}, // two edits of two letters is no misspelling
		{"x", nil, `tool "x" not found on server "s" (it has no tools)`},
		{"zzzz", many, `tool "zzzz" not found on server "s" (it has: t00, t01, t02, t03, t04, t05, t06, t07, t08, t09, and 2 more (see: mcpdctl tools s))`},
	}
	for _, tt := range tests {
		if got := toolNotFound("s", tt.tool, tt.names).Error(); got != tt.want {
			t.Errorf("toolNotFound(%q, %q)\n got %s\nwant %s", tt.tool, tt.names, got, tt.want)
		}
	}
}
