package config

import (
	"errors"
	"fmt"
	"strings"
)

// Err returns the problems of the config's servers joined, or nil.
func (c *Config) Err() error {
	errs := make([]error, len(c.Problems))
	for i, e := range c.Problems {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// Valid returns the names of the servers without problems.
func (c *Config) Valid() []string {
	var out []string
	for _, s := range c.Servers {
		if s.Invalid == "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// Error is one problem in a config file. Config.Problems holds those of
// single servers; for a file unusable as a whole Parse returns one *Error,
// or several joined with errors.Join (errors.As finds them either way).
type Error struct {
	// Path is the config file.
	Path string
	// Line and Column locate a JSON syntax error (1-based); zero otherwise.
	Line, Column int
	// Server is the server the problem is in, if any.
	Server string
	// Key is the key the problem is in, if any ("args[1]", "env.TOKEN").
	Key string
	// Msg describes the problem.
	Msg string
}

// Error formats the problem as
// `config.json: server "foo": key "requestTimeout": invalid duration "abc"`,
// or `config.json:3:5: invalid character ...` for syntax errors.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// summary joins problems of one server for Server.Invalid.
func summary(errs []*Error) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Msg
		if e.Key != "" {
			parts[i] = e.Key + ": " + e.Msg
		}
	}
	return strings.Join(parts, "; ")
}
