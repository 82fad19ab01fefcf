// Package pin keeps the tool definitions of each server as they were first
// seen (or last approved) and compares later lists against them, so that a
// server whose tools change under an app (a new description that instructs
// the model, a widened input schema) is noticed: under ModeWarn the change
// is reported, under ModeEnforce the changed and new tools are withheld
// until approved.
//
// A tool's pinned definition is its name, title, description, input and
// output schema and annotations, in canonical JSON (object keys sorted,
// no whitespace), and the SHA-256 digest of that text. Other members
// (_meta, icons, execution hints) may change freely.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Mode is a server's pinning mode (config key "pin").
type Mode string

// Modes.
const (
	// ModeOff records and checks nothing.
	ModeOff Mode = "off"
	// ModeWarn records definitions and reports changes, serving every tool.
	ModeWarn Mode = "warn"
	// ModeEnforce also withholds changed and new tools from every app, and
	// refuses their calls, until approved.
	ModeEnforce Mode = "enforce"
)

// DefaultMode applies to a server that does not set "pin": changes are
// reported but nothing breaks when a server is upgraded.
const DefaultMode = ModeWarn

// Modes lists the valid modes, for messages.
var Modes = []string{string(ModeOff), string(ModeWarn), string(ModeEnforce)}

// ParseMode parses a config value; "" is DefaultMode.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return DefaultMode, nil
	}
	if !slices.Contains(Modes, s) {
		return "", fmt.Errorf("invalid pin mode %q, want off, warn or enforce", s)
	}
	return Mode(s), nil
}

// pinnedMembers are the members of a Tool object that are pinned.
var pinnedMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// Definition is one tool's pinned text and its digest.
type Definition struct {
	// Digest is "sha256:" and the hex digest of Text.
	Digest string `json:"digest"`
	// Text is the canonical JSON of the pinned members.
	Text json.RawMessage `json:"definition"`
}

// Tools maps tool names to their definitions.
type Tools map[string]Definition

// ParseList reads a tools/list items array (the merged list) into
// definitions. A tool without a string name is an error, as is a name
// listed twice.
func ParseList(items json.RawMessage) (Tools, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(items, &raw); err != nil {
		return nil, fmt.Errorf("tools list: %w", err)
	}
	out := make(Tools, len(raw))
	for i, item := range raw {
		name, def, err := ParseTool(item)
		if err != nil {
			return nil, fmt.Errorf("tools list: tool %d: %w", i, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("tools list: tool %q is listed twice", name)
		}
		out[name] = def
	}
	return out, nil
}

// ParseTool returns a Tool object's name and definition.
func ParseTool(item json.RawMessage) (string, Definition, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(item, &members); err != nil {
		return "", Definition{}, err
	}
	var name string
	if err := json.Unmarshal(members["name"], &name); err != nil || name == "" {
		return "", Definition{}, errors.New(`no "name" string`)
	}
	canon := make(map[string]any, len(pinnedMembers))
	for _, k := range pinnedMembers {
		v, ok := members[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return "", Definition{}, fmt.Errorf("%s: %w", k, err)
		}
		canon[k] = x
	}
	text, err := json.Marshal(canon) // maps marshal with sorted keys
	if err != nil {
		return "", Definition{}, err
	}
	sum := sha256.Sum256(text)
	return name, Definition{Digest: "sha256:" + hex.EncodeToString(sum[:]), Text: text}, nil
}

// ChangedMembers names the pinned members whose values differ between two
// definitions of a tool, in pinnedMembers order.
func ChangedMembers(a, b Definition) []string {
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal(a.Text, &ma)
	_ = json.Unmarshal(b.Text, &mb)
	var out []string
	for _, k := range pinnedMembers {
		if !bytes.Equal(ma[k], mb[k]) {
			out = append(out, k)
		}
	}
	return out
}
