package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// CheckCommands looks up the command of every enabled server without other
// problems, as mcpd would run it: a command with a slash must be an
// executable file, one without is searched in mcpd's PATH (a PATH in the
// server's "env" is the child's, not where its command is found). A server
// whose command cannot run gets Invalid set and its problem appended to
// c.Problems. It only stats files, and checks each server at most once.
func (c *Config) CheckCommands() {
	// Servers often share a command (npx, uvx, one binary with different
	// args): each distinct one is looked up once.
	seen := map[string]string{}
	for i := range c.Servers {
		s := &c.Servers[i]
		if s.Disabled || s.Invalid != "" || s.Command == "" {
			continue
		}
		msg, ok := seen[s.Command]
		if !ok {
			msg = commandProblem(s.Command)
			seen[s.Command] = msg
		}
		if msg == "" {
			continue
		}
		e := &Error{Path: c.Path, Server: s.Name, Key: "command", Msg: msg}
		s.Invalid = summary([]*Error{e})
		c.Problems = append(c.Problems, e)
	}
}

// commandProblem says why command cannot be run, or returns "".
func commandProblem(command string) string {
	if strings.ContainsRune(command, '/') {
		fi, err := os.Stat(command)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Sprintf("%q does not exist", command)
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Sprintf("%q: %v", command, err)
		case fi.IsDir():
			return fmt.Sprintf("%q is a directory, not a program", command)
		case fi.Mode().Perm()&0o111 == 0:
			return fmt.Sprintf("%q is not executable (chmod +x it)", command)
		}
		return ""
	}
	if _, err := exec.LookPath(command); err != nil {
		path := os.Getenv("PATH")
		if path == "" {
			path = "empty"
		}
		return fmt.Sprintf("%q not found in mcpd's PATH (%s); give its absolute path, or set PATH in mcpd's environment (e.g. in %s under systemd)",
			command, path, EnvFileHint)
	}
	return ""
}
