package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// isToolError says what decoding the result would say, whichever way it
// finds out.
func TestIsToolError(t *testing.T) {
	decoded := func(result string) bool {
		var r struct {
			IsError bool `json:"isError"`
		}
		return json.Unmarshal([]byte(result), &r) == nil && r.IsError
	}
	for _, result := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[],"isError":false}`,
		`{"content":[],"isError":true}`,
		` { "isError" : true , "content":[]} `,
		`{"isError":true,"isError":false}`, // the last one counts
		`{"isError":false,"isError":true}`,
		`{"isError":false,"ISERROR":true}`,
		`{"isError":"true"}`, // not a bool: decoding fails
		`{"isError":1}`,
		`{"isError":null}`,
		`{"content":[{"type":"text","text":"\"isError\":true"}]}`, // only in a string
		`{"nested":{"isError":true}}`,
		`[{"isError":true}]`,
	} {
		if got, want := isToolError(json.RawMessage(result)), decoded(result); got != want {
			t.Errorf("isToolError(%s) = %v, decoding says %v", result, got, want)
		}
	}
	// MCP's member is "isError": without it spelled so, no tool error
	// (decoding would match any case, and escapes).
	for _, result := range []string{`{"IsError":true}`, `{"is\u0045rror":true}`} {
		if isToolError(json.RawMessage(result)) {
			t.Errorf("isToolError(%s) = true, want false", result)
		}
	}
}

func TestArgsDigest(t *testing.T) {
	for _, args := range []string{`{}`, `{"message":"hi"}`} {
		sum := sha256.Sum256([]byte(args))
		if got, want := argsDigest([]byte(args)), "sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Errorf("argsDigest(%s) = %s, want %s", args, got, want)
		}
	}
}
