package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// The command tree is built on cobra for what the standard flag package
// lacks: flags after positional arguments and "--", short forms (-n5),
// global flags valid on every verb, shell completion with values from the
// running daemon, and help and man pages generated from one declaration.

func init() {
	// The help lists verbs in the order of commands, and so does completion.
	cobra.EnableCommandSorting = false
}

// runFunc runs a verb with its positional arguments, its flags already
// parsed into the variables its setup declared.
type runFunc func(ctx context.Context, c *cli, cmd *command, args []string) error

// command is one verb of mcpdctl.
type command struct {
	name     string
	synopsis string // what follows the verb in the usage line
	short    string // one-line description for the verb list
	long     string // optional extra help text
	hidden   bool   // left out of the help and completion (gen-man)

	// minArgs and maxArgs bound the positional arguments (maxArgs < 0: no
	// upper bound).
	minArgs, maxArgs int
	// setup declares the verb's flags on fs and returns the function that
	// runs it; it is called once per invocation.
	setup func(fs *pflag.FlagSet) runFunc
	// complete offers values for the next positional argument (nil: none).
	complete completer
}

// commands lists the verbs in the order the help shows them. "help",
// "completion" and "gen-man" are added by newRoot (they describe this table,
// so they cannot be in it).
var commands = []*command{
	statusCmd,
	serversCmd,
	startCmd,
	stopCmd,
	restartCmd,
	loginCmd,
	openCmd,
	logoutCmd,
	logsCmd,
	watchCmd,
	toolsCmd,
	callCmd,
	promptsCmd,
	promptCmd,
	resourcesCmd,
	readCmd,
	cacheCmd,
	auditCmd,
	bridgeCmd,
	hostsCmd,
	connectCmd,
	disconnectCmd,
	reloadCmd,
	configCmd,
	searchCmd,
	addCmd,
	outdatedCmd,
	secretCmd,
	versionCmd,
}

// usageError is a wrong command line; report prints it with the usage line
// of its verb and exits 2.
type usageError struct {
	cmd *command // nil for the top level
	msg string
}

func (e *usageError) Error() string { return e.msg }

// errHelpShown reports that help was printed on request: exit 0.
var errHelpShown = errors.New("help shown")

// run executes mcpdctl with the command-line arguments args (without the
// program name), writing its output to stdout and stderr. The returned error
// decides the exit code, see report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli{stdout: stdout, stderr: stderr}
	defer c.close()
	root := c.newRoot()
	root.SetArgs(args)
	ctx = apiclient.Outgoing(ctx, apiclient.Metadata{Client: clientName, Version: version.Version})
	return root.ExecuteContext(ctx)
}

// newRoot builds the command tree of one invocation.
func (c *cli) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpdctl",
		Short: "control mcpd, the daemon that supervises local MCP servers",
		Long: `mcpdctl controls mcpd, the daemon that supervises local MCP servers: it shows
the daemon's and the servers' status, starts and stops servers, and lists and
calls the tools, prompts and resources of the supervised MCP servers, and
connects MCP hosts to them. It talks to mcpd over its gRPC socket; "bridge"
relays a host's MCP messages over mcpd's bridge socket.`,
		Args:              cobra.ArbitraryArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              c.runRoot,
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.PersistentFlags().StringVar(&c.socketFlag, "socket", "",
		"mcpd's socket `PATH` (default $MCPD_SOCKET, else $XDG_RUNTIME_DIR/mcpd/mcpd.sock, else /tmp/mcpd-<uid>/mcpd.sock)")
	root.Flags().BoolVar(&c.showVersion, "version", false, "print mcpdctl's version and exit")
	root.SetFlagErrorFunc(flagErrorFunc(nil))
	root.SetHelpFunc(c.helpFunc)
	root.SetHelpCommand(c.helpCommand())
	for _, cmd := range append(commands[:len(commands):len(commands)], completionCmd, genManCmd) {
		root.AddCommand(c.cobraCommand(cmd))
	}
	c.root = root
	return root
}

// cobraCommand turns a verb into its cobra command.
func (c *cli) cobraCommand(cmd *command) *cobra.Command {
	cc := &cobra.Command{
		Use:    cmd.name,
		Short:  cmd.short,
		Long:   cmd.long,
		Hidden: cmd.hidden,
		Args: func(_ *cobra.Command, args []string) error {
			return checkArgCount(cmd, args)
		},
		ValidArgsFunction: c.completionFunc(cmd),
	}
	if cmd.synopsis != "" {
		cc.Use += " " + cmd.synopsis
	}
	cc.SetFlagErrorFunc(flagErrorFunc(cmd))
	runVerb := cmd.setup(cc.Flags())
	cc.RunE = func(cc *cobra.Command, args []string) error {
		return runVerb(cc.Context(), c, cmd, args)
	}
	return cc
}

// runRoot is mcpdctl without a verb, or with one it does not know.
func (c *cli) runRoot(_ *cobra.Command, args []string) error {
	switch {
	case c.showVersion:
		fmt.Fprintf(c.stdout, "mcpdctl %s\n", version.Version)
		return nil
	case len(args) == 0:
		c.printTopHelp(c.stderr)
		return &usageError{} // the help says it all
	}
	return unknownVerb(args[0])
}

// unknownVerb is the error for a verb mcpdctl does not have, with the
// closest one when it looks like a misspelling.
func unknownVerb(verb string) error {
	names := []string{"help", completionCmd.name}
	for _, cmd := range commands {
		names = append(names, cmd.name)
	}
	msg := fmt.Sprintf("unknown verb %q", verb)
	if best := closestName(verb, names); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return &usageError{msg: msg}
}

// checkArgCount checks that there are between cmd.minArgs and cmd.maxArgs
// positional arguments.
func checkArgCount(cmd *command, args []string) error {
	switch {
	case len(args) < cmd.minArgs:
		return &usageError{cmd: cmd, msg: "missing arguments"}
	case cmd.maxArgs >= 0 && len(args) > cmd.maxArgs:
		return &usageError{cmd: cmd, msg: fmt.Sprintf("unexpected argument %q", args[cmd.maxArgs])}
	}
	return nil
}

// flagErrorFunc makes a bad flag of cmd (nil: a global flag) a usage error,
// in the words mcpdctl has always used.
func flagErrorFunc(cmd *command) func(*cobra.Command, error) error {
	return func(_ *cobra.Command, err error) error {
		return &usageError{cmd: cmd, msg: flagErrorText(err)}
	}
}

func flagErrorText(err error) string {
	var (
		notExist *pflag.NotExistError
		noValue  *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &notExist):
		return "flag provided but not defined: -" + notExist.GetSpecifiedName()
	case errors.As(err, &noValue):
		return "flag needs an argument: -" + noValue.GetFlag().Name
	case errors.As(err, &invalid):
		msg := fmt.Sprintf("invalid value %q for flag -%s: parse error", invalid.GetValue(), invalid.GetFlag().Name)
		switch typ := invalid.GetFlag().Value.Type(); {
		case typ == "duration":
			msg += " (want a duration such as 30s, 5m or 1h30m)"
		case strings.HasPrefix(typ, "int"), strings.HasPrefix(typ, "uint"), typ == "count":
			msg += " (want a whole number)"
		}
		return msg
	}
	return err.Error()
}

// report prints err the way mcpdctl reports errors and returns the exit code.
func report(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &ue):
		switch {
		case ue.msg == "":
			// Already explained on stderr.
		case ue.cmd != nil:
			fmt.Fprintf(stderr, "mcpdctl %s: %s\n", ue.cmd.name, sanitizeText(ue.msg))
			fmt.Fprintf(stderr, "usage: %s\n", usageLine(ue.cmd))
			fmt.Fprintf(stderr, "Run 'mcpdctl %s --help' for more.\n", ue.cmd.name)
		default:
			fmt.Fprintf(stderr, "mcpdctl: %s\n", sanitizeText(ue.msg))
			fmt.Fprintln(stderr, "Run 'mcpdctl --help' for usage.")
		}
		return exitUsage
	default:
		// An error may quote a child (an MCP error, its exit).
		fmt.Fprintf(stderr, "mcpdctl: %s\n", sanitizeText(err.Error()))
		return exitFailure
	}
}

func usageLine(cmd *command) string {
	s := "mcpdctl [--socket PATH] " + cmd.name
	if cmd.synopsis != "" {
		s += " " + cmd.synopsis
	}
	return s
}

// timeoutFlag declares the --timeout flag every verb has.
func timeoutFlag(fs *pflag.FlagSet, def time.Duration) *time.Duration {
	return fs.Duration("timeout", def, "give up after this long; 0 means no limit")
}
