package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// inputSchema is the part of a tool's inputSchema that types its key=value
// arguments: the JSON Schema type of each property.
type inputSchema struct {
	Properties map[string]struct {
		Type json.RawMessage `json:"type"` // "string", or ["string", "null"]
	} `json:"properties"`
}

// propertyNames are the schema's property names, sorted.
func (s *inputSchema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// types are the JSON Schema types the schema gives property key, none when
// it says nothing about it.
func (s *inputSchema) types(key string) []string {
	if s == nil {
		return nil
	}
	raw := s.Properties[key].Type
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many) // not a list either: nothing known
	return many
}

// toolSchema returns the inputSchema of tool on server as mcpd lists it
// (from its cache), nil when the tool is not listed or the list cannot be
// had: the call itself then says what is wrong.
func (c *cli) toolSchema(ctx context.Context, server, tool string) (*inputSchema, error) {
	items, err := c.listItems(ctx, "tools/list", server)
	if err != nil {
		return nil, err
	}
	for _, raw := range items {
		var t struct {
			Name        string       `json:"name"`
			InputSchema *inputSchema `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == tool {
			return t.InputSchema, nil
		}
	}
	return nil, nil
}

// typedKeyValues builds a tool's arguments object from key=value pairs,
// each value typed by schema: a string property takes the value as it is
// (message=123 is "123"), a number, integer or boolean property parses it,
// an array or object property reads it as JSON. A property the schema does
// not type (or no schema) takes JSON when the value parses as JSON, else
// the string.
func typedKeyValues(args []string, schema *inputSchema) (string, error) {
	return buildKeyValues(args, func(k, v string) ([]byte, error) {
		val, err := typedValue(v, schema.types(k))
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", k, err)
		}
		return val, nil
	})
}

// typedValue is v as JSON of the first of types it can be, or inferred
// without types.
func typedValue(v string, types []string) ([]byte, error) {
	if len(types) == 0 || slices.Contains(types, "string") {
		if len(types) == 0 && json.Valid([]byte(v)) {
			var b bytes.Buffer
			err := json.Compact(&b, []byte(v))
			return b.Bytes(), err
		}
		return marshalNoEscape(v)
	}
	for _, t := range types {
		if val, ok := asType(v, t); ok {
			return val, nil
		}
	}
	return nil, fmt.Errorf("%q is not %s, as the tool's inputSchema wants", v, typeNames(types))
}

// asType returns v as JSON of the JSON Schema type t, if it is one.
func asType(v, t string) ([]byte, bool) {
	var x any
	if json.Unmarshal([]byte(v), &x) != nil {
		return nil, false
	}
	ok := false
	switch x := x.(type) {
	case float64:
		ok = t == "number" || t == "integer" && x == math.Trunc(x)
	case bool:
		ok = t == "boolean"
	case []any:
		ok = t == "array"
	case map[string]any:
		ok = t == "object"
	case nil:
		ok = t == "null"
	}
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(v)); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}

// typeNames says "a number", "an integer or null".
func typeNames(types []string) string {
	var parts []string
	for _, t := range types {
		switch t {
		case "integer", "array", "object":
			parts = append(parts, "an "+t)
		case "null":
			parts = append(parts, "null")
		default:
			parts = append(parts, "a "+t)
		}
	}
	return strings.Join(parts, " or ")
}
