package config

import (
	"bytes"

	"github.com/tailscale/hujson"
)

// StripJSONComments turns JSON with comments and trailing commas (as VS
// Code's mcp.json and settings.json allow) into standard JSON of the same
// length: comments and trailing commas become spaces, so line and column
// numbers in later errors still point into the file. In data that does not
// parse even so, only the comments are blanked, so that the JSON decoder's
// error points at the real problem. data itself is never modified.
func StripJSONComments(data []byte) []byte {
	if std, err := hujson.Standardize(bytes.Clone(data)); err == nil {
		return std
	}
	return blankComments(data)
}

// blankComments returns data with every // and /* */ comment outside a
// string replaced by spaces (newlines kept).
func blankComments(data []byte) []byte {
	out := bytes.Clone(data)
	inString, escaped := false, false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			stop := len(out)
			if end := bytes.Index(out[i+2:], []byte("*/")); end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i-- // the loop's i++ moves past the comment
		}
	}
	return out
}
