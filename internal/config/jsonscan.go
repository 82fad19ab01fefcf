package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// This file splits JSON that is already known to be valid (parse checks the
// whole file once, first) into the members of an object and the elements of
// an array, as sub-slices of the input: no value is decoded, copied or
// scanned for validity again. With encoding/json's Decoder every level of
// the file was validated and copied anew, which made a config of 500
// servers take tens of milliseconds to parse.

// errNotValid is returned for input that is not the valid JSON the scanner
// expects; parse never passes such input.
var errNotValid = errors.New("malformed JSON")

// objectMembers returns the members of the JSON object raw in file order,
// duplicates included.
func objectMembers(raw []byte) ([]member, error) {
	var out []member
	err := walk(raw, '{', '}', func(i int) (int, error) {
		kEnd := stringEnd(raw, i)
		if kEnd < 0 {
			return 0, errNotValid
		}
		key, err := decodeString(raw[i:kEnd])
		if err != nil {
			return 0, err
		}
		i = skipSpace(raw, kEnd)
		if i >= len(raw) || raw[i] != ':' {
			return 0, errNotValid
		}
		i = skipSpace(raw, i+1)
		vEnd := valueEnd(raw, i)
		if vEnd < 0 {
			return 0, errNotValid
		}
		out = append(out, member{key: key, val: raw[i:vEnd:vEnd]})
		return vEnd, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// arrayElements returns the elements of the JSON array raw.
func arrayElements(raw []byte) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := walk(raw, '[', ']', func(i int) (int, error) {
		end := valueEnd(raw, i)
		if end < 0 {
			return 0, errNotValid
		}
		out = append(out, raw[i:end:end])
		return end, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walk steps through the JSON object or array raw, which opens with
// opening and closes with closing: item reads the member or element
// starting at raw[i] and returns the index just past it.
func walk(raw []byte, opening, closing byte, item func(i int) (int, error)) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != opening {
		return errNotValid
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == closing {
		return nil
	}
	for i < len(raw) {
		end, err := item(i)
		if err != nil {
			return err
		}
		if i = skipSpace(raw, end); i >= len(raw) {
			break
		}
		switch raw[i] {
		case closing:
			return nil
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return errNotValid
		}
	}
	return errNotValid
}

// decodeString returns the value of the JSON string raw (quotes included):
// the bytes themselves when there is nothing to unescape or replace, as
// json.Unmarshal would decode them otherwise.
func decodeString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errNotValid
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at
// data[i], or -1 if there is none.
func stringEnd(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte (the rest of \uXXXX is plain)
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the JSON value starting at data[i],
// or -1 if there is none.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				if i = stringEnd(data, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	start := i
	for ; i < len(data); i++ {
		if c := data[i]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if i == start {
		return -1
	}
	return i
}
