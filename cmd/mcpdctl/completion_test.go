package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completionEnv makes "mcpdctl" on PATH this test binary running mcpdctl
// (see runAsHelper), talking to the mcpd at sock, and returns the
// environment for a shell.
func completionEnv(t *testing.T, sock string) []string {
	t.Helper()
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "mcpdctl")); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), envRunAs+"=1", "MCPD_SOCKET="+sock, "PATH="+bin+":"+os.Getenv("PATH"))
}

// bashCompletion drives the bash completion function as bash does at a
// Tab: one completion per line of words (the last one being completed),
// each answered by the COMPREPLY it gets, a line of its own.
const bashCompletion = `
if [ -r /usr/share/bash-completion/bash_completion ]; then
	. /usr/share/bash-completion/bash_completion
else
	# What the script needs of the bash-completion package.
	_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
source <(mcpdctl completion bash) || exit 1
complete -p mcpdctl
# compopt works only in a completion bash itself started; what the script
# asks of it (no space after "city=") is not what is checked here.
compopt() { :; }
while read -r -a COMP_WORDS; do
	[ "${COMP_WORDS[-1]}" = "_" ] && COMP_WORDS[-1]=""
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	__start_mcpdctl
	echo "${COMPREPLY[*]}"
done
`

// runBashCompletion completes each of lines ("_" stands for an empty last
// word) in a real bash and returns the completions of each, sorted.
func runBashCompletion(t *testing.T, env []string, lines []string) (completeLine string, got [][]string, stderr string) {
	t.Helper()
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", bashCompletion)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	outLines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(outLines) != len(lines)+1 {
		t.Fatalf("bash printed %d lines for %d completions:\n%s\nstderr:\n%s", len(outLines), len(lines), out.String(), errb.String())
	}
	for _, l := range outLines[1:] {
		words := strings.Fields(l)
		slices.Sort(words)
		got = append(got, words)
	}
	return outLines[0], got, errb.String()
}

// The bash completion script completes verbs, flags, and values from the
// running mcpd: server names, the tools of the server named, their
// argument names, prompt names and resource URIs.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	_, sock := startFake(t)
	tests := []struct {
		line string
		want string // space-separated, sorted
	}{
		{"mcpdctl st", "start status stop"},
		{"mcpdctl comp", "completion"},
		{"mcpdctl call _", "idle looping notes weather"},
		{"mcpdctl call w", "weather"},
		{"mcpdctl call weather _", "alerts forecast"},
		{"mcpdctl call weather f", "forecast"},
		{"mcpdctl call weather forecast _", "city="},
		{"mcpdctl call --json weather _", "alerts forecast"},
		{"mcpdctl prompt weather _", "plan_trip"},
		{"mcpdctl read notes _", "file:///notes/todo.md"},
		{"mcpdctl logs _", "idle looping notes weather"},
		{"mcpdctl logs weather _", ""},
		{"mcpdctl logs --l", "--lines"},
		{"mcpdctl status --j", "--json"},
		{"mcpdctl watch weather _", "idle looping notes"},
		{"mcpdctl cache _", "clear"},
		{"mcpdctl completion _", "bash fish zsh"},
	}
	var lines []string
	for _, tt := range tests {
		lines = append(lines, tt.line)
	}
	complete, got, stderr := runBashCompletion(t, completionEnv(t, sock), lines)
	if !strings.Contains(complete, "-F __start_mcpdctl mcpdctl") {
		t.Errorf("complete -p mcpdctl = %q", complete)
	}
	for i, tt := range tests {
		if g := strings.Join(got[i], " "); g != tt.want {
			t.Errorf("%q completes to %q, want %q", tt.line, g, tt.want)
		}
	}
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
}

// Without mcpd (no socket, or one nobody answers on), completion offers no
// values and says nothing.
func TestBashCompletionWithoutDaemon(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	for _, sock := range []string{filepath.Join(dir, "none.sock"), staleSocket(t, dir)} {
		_, got, stderr := runBashCompletion(t, completionEnv(t, sock), []string{"mcpdctl call _", "mcpdctl call weather _", "mcpdctl st"})
		if len(got[0]) != 0 || len(got[1]) != 0 || strings.Join(got[2], " ") != "start status stop" || stderr != "" {
			t.Errorf("socket %s: completions %q, stderr %q", sock, got, stderr)
		}
	}
}

// staleSocket returns the path of a socket file nobody listens on.
func staleSocket(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	return sock
}

// zsh and fish load their scripts; fish, which completes from a command
// line without a terminal, gets the daemon's values.
func TestZshFishCompletion(t *testing.T) {
	_, sock := startFake(t)
	env := completionEnv(t, sock)
	t.Run("zsh", func(t *testing.T) {
		if _, err := exec.LookPath("zsh"); err != nil {
			t.Skip("zsh not installed (apt-get install zsh)")
		}
		cmd := exec.Command("zsh", "-f", "-c", `autoload -U compinit && compinit -u -D && source <(mcpdctl completion zsh) && whence -w _mcpdctl`)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "_mcpdctl: function" {
			t.Errorf("zsh: %v: %s", err, out)
		}
	})
	t.Run("fish", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			t.Skip("fish not installed (apt-get install fish)")
		}
		cmd := exec.Command("fish", "--no-config", "-c", `mcpdctl completion fish | source; complete -C "mcpdctl call weather "`)
		cmd.Env = append(env, "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, _, _ := strings.Cut(l, "\t")
			names = append(names, name)
		}
		slices.Sort(names)
		if err != nil || strings.Join(names, " ") != "alerts forecast" {
			t.Errorf("fish: %v: %s", err, out)
		}
	})
}
