package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// This file holds the parser's JSON helpers (objects in file order, value
// kinds, error positions) and the spelling suggestions of its messages.

// member is one key/value pair of a JSON object, in file order.
type member struct {
	key string
	val json.RawMessage
}

// object returns the members of the JSON object raw, reporting a wrong type
// or a duplicate key. what names the value in the wrong-type error when it is
// neither a server nor a key ("the top level").
func (p *parser) object(raw json.RawMessage, server, key, what string) ([]member, bool) {
	if k := Kind(raw); k != "object" {
		if what != "" {
			p.fail(server, key, "%s must be a JSON object, got %s", what, k)
		} else {
			p.fail(server, key, "want an object, got %s", k)
		}
		return nil, false
	}
	all, err := objectMembers(raw) // jsonscan.go
	if err != nil {
		p.fail(server, key, "%v", err)
		return nil, false
	}
	out := all[:0]
	seen := make(map[string]bool, len(all))
	ok := true
	for _, m := range all {
		if seen[m.key] {
			p.fail(server, key, "duplicate key %q", m.key)
			ok = false
			continue
		}
		seen[m.key] = true
		out = append(out, m)
	}
	return out, ok
}

// Kind names the JSON type of raw for error messages: "string", "object",
// "array", "boolean", "null", "number", or "nothing".
func Kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// Position converts the offset of a json.SyntaxError (the number of bytes
// read when the error was detected) to a 1-based line and column (in runes)
// of the offending byte.
func Position(data []byte, offset int64) (line, col int) {
	if offset > 0 {
		offset-- // the byte that caused the error was the last one read
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	col = len([]rune(string(before[lineStart:]))) + 1
	return line, col
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// suggest returns `, did you mean "x"?` when key is a likely misspelling of
// one of known (see Closest, with at most two edits), else "".
func suggest(key string, known []string) string {
	if best := Closest(key, known, 2); best != "" {
		return fmt.Sprintf(", did you mean %q?", best)
	}
	return ""
}

// Closest returns the name in names nearest to want when it is a likely
// misspelling of it: the same ignoring case, "_" and "-", or at most
// maxEdits letters edited away (ignoring case); else "".
func Closest(want string, names []string, maxEdits int) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	best, bestDist := "", maxEdits+1
	for _, n := range names {
		if norm(n) == norm(want) {
			return n
		}
		if d := editDistance(strings.ToLower(want), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and transpositions of two
// neighbours ("dmeo" is one edit from "demo") each count one.
func editDistance(a, b string) int {
	// rows[0..2] are the rows of i-2, i-1 and i.
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		older, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], older[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, older}
	}
	return rows[1][len(b)]
}
