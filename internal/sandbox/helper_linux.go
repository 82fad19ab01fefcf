//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// helperExitCode is the helper's exit status when it cannot apply the
// plan or exec the server (as a shell's 126: found but not run).
const helperExitCode = 126

// RunIfHelper runs the sandbox helper when the environment carries a plan
// (EnvPlan): it applies the plan and execs the server, and never returns.
// Without a plan it returns at once. Call it first thing in main.
func RunIfHelper() {
	data, ok := os.LookupEnv(EnvPlan)
	if !ok {
		return
	}
	_ = os.Unsetenv(EnvPlan)
	err := runHelper([]byte(data))
	// Only a failure returns: the server never ran.
	fmt.Fprintf(os.Stderr, "mcpd sandbox: %v\n", err)
	os.Exit(helperExitCode)
}

// runHelper applies the plan and execs the server; it returns only on
// failure.
func runHelper(data []byte) error {
	var pl Plan
	if err := json.Unmarshal(data, &pl); err != nil {
		return fmt.Errorf("decode plan: %w", err)
	}
	if len(pl.Argv) == 0 || pl.Path == "" {
		return errors.New("plan without a command")
	}
	if pl.OpenFiles > 0 {
		lim := &unix.Rlimit{Cur: uint64(pl.OpenFiles), Max: uint64(pl.OpenFiles)}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, lim); err != nil {
			return fmt.Errorf("set openFiles limit %d: %w", pl.OpenFiles, err)
		}
	}
	// The thread that restricts itself is the one that execs: Landlock
	// domains and no_new_privs are per thread until execve makes the
	// process one thread again.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if pl.ABI > 0 {
		if err := restrictSelf(&pl); err != nil {
			return err
		}
	}
	err := syscall.Exec(pl.Path, pl.Argv, os.Environ())
	return fmt.Errorf("exec %s: %w", pl.Path, err)
}

// abiConfigs are go-landlock's configs by ABI, all the rights each handles.
var abiConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// restrictSelf builds the plan's Landlock ruleset and enforces it on the
// calling thread (which must be locked to it and exec next).
func restrictSelf(pl *Plan) error {
	cfg := abiConfigs[min(pl.ABI, len(abiConfigs))-1]
	// TCP only: UDP (DNS) is not the network this policy is about.
	cfg.HandledAccessNet = 0
	if pl.RestrictNet {
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if pl.ABI >= 6 {
		cfg.Scoped = ll.ScopeSignal
		if pl.RestrictNet {
			cfg.Scoped |= ll.ScopeAbstractUnixSocket
		}
	}
	if pl.ABI >= 7 {
		// Denials of the server (after exec) reach the audit log.
		cfg = cfg.EnableLoggingForSubprocesses()
	}
	var rules []landlock.Rule
	add := func(paths []string, rule func(...string) landlock.FSRule) {
		if len(paths) > 0 {
			rules = append(rules, rule(paths...).IgnoreIfMissing())
		}
	}
	add(pl.ReadDirs, landlock.RODirs)
	add(pl.ReadFiles, landlock.ROFiles)
	add(pl.WriteDirs, landlock.RWDirs)
	add(pl.WriteFiles, landlock.RWFiles)
	if pl.RestrictNet {
		for _, port := range pl.Ports {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock restrict: %w", err)
	}
	return nil
}

// minNetABI is the first Landlock ABI with TCP rules (Linux 6.7).
const minNetABI = 4

// abiVersion is the kernel's Landlock ABI (replaced in tests).
var abiVersion = ll.LandlockGetABIVersion

// checkKernel returns the kernel's Landlock ABI and what of a policy it
// cannot honour.
func checkKernel(restrictNet bool) (abi int, unmet []string) {
	abi, err := abiVersion()
	if err != nil || abi < 1 {
		why := "the kernel offers no Landlock"
		switch {
		case errors.Is(err, unix.ENOSYS):
			why += " (built without CONFIG_SECURITY_LANDLOCK)"
		case errors.Is(err, unix.EOPNOTSUPP):
			why += " (disabled: add landlock to the lsm= boot parameter)"
		case err != nil:
			why += fmt.Sprintf(" (%v)", err)
		}
		return 0, []string{why + ": filesystem and network are not confined"}
	}
	if restrictNet && abi < minNetABI {
		unmet = append(unmet, fmt.Sprintf("Landlock ABI %d has no TCP rules (needs ABI %d, Linux 6.7): the network is not confined", abi, minNetABI))
	}
	return abi, unmet
}

// Supported reports whether this platform can run the helper.
const Supported = true

// ABI returns the kernel's Landlock ABI version, 0 without Landlock.
func ABI() int {
	abi, err := abiVersion()
	if err != nil || abi < 0 {
		return 0
	}
	return abi
}
