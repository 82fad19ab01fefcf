package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/mcpd-dev/mcpd/internal/secrets"
)

var secretCmd = &command{
	name:     "secret",
	synopsis: "set NAME | get NAME [--reveal] | rm NAME | ls",
	short:    "store the values of ${secret:NAME} in the keyring",
	long: `secret set NAME
  Stores a value for ${secret:NAME} (in a server's args, env or headers),
  read from the terminal without echo, or from standard input when it is
  not a terminal (one line; a final newline is dropped). Servers read it
  when they start: restart one that failed for want of it.

secret get NAME [--reveal]
  Says whether NAME is stored; --reveal prints its value.

secret rm NAME
  Removes NAME.

secret ls
  Lists the stored names (never the values) and where they are kept.

Secrets are kept in the desktop's Secret Service (GNOME Keyring, KWallet,
KeePassXC) as items with the attributes service=mcpd name=NAME, so
"secret-tool lookup service mcpd name NAME" finds them; with no session bus
or no Secret Service, in a 0600 file in mcpd's state directory. A locked
keyring is unlocked with the desktop's prompt.`,
	minArgs: 1, maxArgs: 2,
	setup: secretSetup,
}

// secretStdin is where "secret set" reads a value that does not come from
// a terminal (tests replace it).
var secretStdin io.Reader = os.Stdin

// openSecrets opens the store mcpdctl uses (tests replace it); it may
// prompt to unlock the keyring.
var openSecrets = func() *secrets.Store { return secrets.Open(secrets.Options{Interactive: true}) }

func secretSetup(fs *pflag.FlagSet) runFunc {
	reveal := fs.Bool("reveal", false, "get: print the value")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this long (an unlock prompt waits for you); 0 means no limit")
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		action := args[0]
		name := ""
		switch action {
		case "set", "get", "rm":
			if len(args) != 2 {
				return &usageError{cmd: cmd, msg: action + " needs the secret's NAME"}
			}
			name = args[1]
			if err := secrets.CheckName(name); err != nil {
				return &usageError{cmd: cmd, msg: strings.TrimPrefix(err.Error(), "secrets: ")}
			}
		case "ls":
			if len(args) != 1 {
				return &usageError{cmd: cmd, msg: "ls takes no NAME"}
			}
		default:
			return &usageError{cmd: cmd, msg: fmt.Sprintf("unknown secret action %q, want set, get, rm or ls", action)}
		}
		if *reveal && action != "get" {
			return &usageError{cmd: cmd, msg: "--reveal is for get"}
		}
		ctx, cancel := c.withTimeout(ctx, *timeout)
		defer cancel()
		st := openSecrets()
		defer st.Close()
		switch action {
		case "set":
			return c.secretSet(ctx, st, name)
		case "get":
			v, err := st.Get(ctx, name)
			if err != nil {
				return err
			}
			if *reveal {
				fmt.Fprintln(c.stdout, v)
			} else {
				fmt.Fprintf(c.stdout, "%s is set (%s); --reveal prints it\n", name, sanitize(st.Backend()))
			}
			return nil
		case "rm":
			if err := st.Delete(ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "removed %s\n", name)
			return nil
		}
		names, err := st.List(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "# %s\n", sanitize(st.Backend()))
		for _, n := range names {
			fmt.Fprintln(c.stdout, sanitize(n))
		}
		return nil
	}
}

// secretSet reads the value (no echo on a terminal) and stores it.
func (c *cli) secretSet(ctx context.Context, st *secrets.Store, name string) error {
	var value string
	if f, ok := secretStdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(c.stderr, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		if err != nil {
			return fmt.Errorf("read the value: %w", err)
		}
		value = string(b)
	} else {
		line, err := bufio.NewReader(io.LimitReader(secretStdin, 1<<20)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the value: %w", err)
		}
		value = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	}
	if value == "" {
		return errors.New("empty value: nothing stored")
	}
	if err := st.Set(ctx, name, value); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "stored %s in %s\n", name, sanitize(st.Backend()))
	return nil
}
