package oauth

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// envDriver makes the test binary the conformance suite's client
// (conformance_driver_test.go) instead of running tests.
const envDriver = "MCPD_OAUTH_CONFORMANCE_DRIVER"

func TestMain(m *testing.M) {
	if os.Getenv(envDriver) != "" {
		os.Exit(conformanceDriver(os.Args[len(os.Args)-1]))
	}
	goleak.VerifyTestMain(m)
}
