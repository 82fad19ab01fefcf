package api

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// envChild selects a helper mode when the test binary is re-executed as a
// child process.
const envChild = "MCPD_API_TEST_CHILD"

func TestMain(m *testing.M) {
	fakemcp.Main() // a fake MCP server when the test spawns itself as one (localops_test.go)
	switch os.Getenv(envChild) {
	case "":
	case "activation":
		os.Exit(activationChild())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", envChild, os.Getenv(envChild))
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}
