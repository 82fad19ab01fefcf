package jsonrpc

// Valid reports whether b is one valid JSON value, with optional white
// space around it: exactly what json.Valid reports, bytes in strings
// unchecked as UTF-8 and nesting bounded at the same depth, in one pass
// with no allocation for the usual depth. Every message mcpd reads is
// checked, so this is on the path of every request and answer.
func Valid(b []byte) bool {
	i, ok := validValue(b, SkipSpace(b, 0))
	return ok && SkipSpace(b, i) == len(b)
}

// maxValidDepth is encoding/json's bound on nesting: deeper input is not
// valid for json.Valid.
const maxValidDepth = 10000

// validValue checks the value at b[i] and everything nested in it, and
// returns the index just past it.
func validValue(b []byte, i int) (int, bool) {
	var inline [32]byte
	stack := inline[:0] // '{' or '[' of each open container, innermost last
	for {
		// At the start of a value.
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxValidDepth {
				return i, false
			}
			stack = append(stack, c)
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				stack = stack[:len(stack)-1]
				i++
				break // an empty container is a whole value
			}
			if c == '{' {
				var ok bool
				if i, ok = validKey(b, i); !ok {
					return i, false
				}
			}
			continue // its first value
		case '"':
			var ok bool
			if i, ok = validString(b, i); !ok {
				return i, false
			}
		case 't':
			if !hasAt(b, i, "true") {
				return i, false
			}
			i += 4
		case 'f':
			if !hasAt(b, i, "false") {
				return i, false
			}
			i += 5
		case 'n':
			if !hasAt(b, i, "null") {
				return i, false
			}
			i += 4
		default:
			var ok bool
			if i, ok = validNumber(b, i); !ok {
				return i, false
			}
		}
		// Just past a whole value: close containers, or go to the next.
		for {
			if len(stack) == 0 {
				return i, true
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			open := stack[len(stack)-1]
			if b[i] == closer(open) {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return i, false
			}
			i = SkipSpace(b, i+1)
			if open == '{' {
				var ok bool
				if i, ok = validKey(b, i); !ok {
					return i, false
				}
			}
			break
		}
	}
}

// key checks an object's key and its colon at b[i], and returns the index
// of its value.
func validKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := validString(b, i)
	if !ok {
		return i, false
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return SkipSpace(b, i+1), true
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// validString checks the string at b[i] (a '"') and returns the index just
// past it: no control character, and only JSON's escapes.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validNumber checks the number at b[i] and returns the index just past
// it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
