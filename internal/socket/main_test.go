package socket

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// envChild selects a helper mode when the test binary is re-executed as a
// child process.
const envChild = "MCPD_SOCKET_TEST_CHILD"

func TestMain(m *testing.M) {
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
