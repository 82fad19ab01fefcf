package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// resultOf checks server's answer to an MCP request: its MCP error, or a
// result that is not a JSON object or has an unknown resultType, fails the
// command. It returns the result and its resultType. what names the
// request in errors (`tool "y"`).
func resultOf(server, what string, resp *mcpdv1.McpResponse) ([]byte, string, error) {
	if resp.GetError() != nil {
		return nil, "", mcpError(server, what, resp.GetError())
	}
	raw := []byte(resp.GetResultJson())
	kind, err := resultType(raw)
	if err != nil {
		return nil, "", fmt.Errorf("server %q: %s: %w", server, what, err)
	}
	return raw, kind, nil
}

// echoResult prints the result as the server sent it when asJSON, then
// fails the command for an input_required result: mcpdctl cannot answer the
// requests it carries. what names the request in that error.
func (c *cli) echoResult(asJSON bool, raw []byte, kind, server, what string) error {
	if asJSON {
		if err := writeRawJSON(c.stdout, string(raw)); err != nil {
			return err
		}
	}
	if kind == "input_required" {
		return inputRequired(server, what)
	}
	return nil
}

// rawResult is resultOf then echoResult, for a verb that has nothing more
// to print with --json: it returns the result to print without.
func (c *cli) rawResult(server, what string, resp *mcpdv1.McpResponse, asJSON bool) ([]byte, error) {
	raw, kind, err := resultOf(server, what, resp)
	if err != nil {
		return nil, err
	}
	return raw, c.echoResult(asJSON, raw, kind, server, what)
}

// jsonShape says what a decoding error found in the terms of the JSON, not
// of mcpdctl's types: `"content" is a string, not an array`.
func jsonShape(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "it"
		if te.Field != "" {
			where = strconv.Quote(te.Field)
		}
		return fmt.Sprintf("%s is %s, not %s", where, jsonValue(te.Value), goTypeJSON(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at byte %d (%s)", se.Offset, se)
	}
	return err.Error()
}

// jsonValue is the kind of value an UnmarshalTypeError found, with its
// article ("number 1.5" stays as it is).
func jsonValue(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "true or false"
	case "string", "number":
		return "a " + v
	}
	return v
}

// goTypeJSON is the JSON a Go type decodes from.
func goTypeJSON(t reflect.Type) string {
	if t == nil {
		return "what was expected"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return goTypeJSON(t.Elem())
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an integer"
}
