package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// mcpdBin is the mcpd binary under test, built by TestMain; "" under -short.
var mcpdBin string

func TestMain(m *testing.M) {
	if fakemcp.Main() { // exits the process when MCPD_FAKE is set
		return
	}
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(helperMain(mode))
	}
	flag.Parse()
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "mcpd-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		mcpdBin = filepath.Join(dir, "mcpd")
		cmd := exec.Command("go", "build", "-race", "-o", mcpdBin, "github.com/mcpd-dev/mcpd/cmd/mcpd")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build mcpd: %v\n", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		code := runTests(m)
		os.RemoveAll(dir)
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// failedTests are the tests that failed with a daemon, in the order they
// ended: printed last, so that the tail of a long failed run names them.
var failedTests struct {
	mu    sync.Mutex // guards names
	names []string
}

// noteFailed records t when it has failed.
func noteFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	failedTests.mu.Lock()
	failedTests.names = append(failedTests.names, t.Name())
	failedTests.mu.Unlock()
}

// runTests runs m under goleak's check and returns the exit code.
func runTests(m *testing.M) int {
	code := m.Run()
	failedTests.mu.Lock()
	if len(failedTests.names) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: failed (their errors are above the mcpd output each dumps): %s\n",
			strings.Join(failedTests.names, ", "))
	}
	failedTests.mu.Unlock()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			return 1
		}
	}
	return code
}
