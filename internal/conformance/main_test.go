package conformance

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// defaultTarget is what the suite runs against unless -conformance.target
// says otherwise.
const defaultTarget = "both"

var targetFlag = flag.String("conformance.target", defaultTarget,
	"what the conformance suite runs against: mcpd (its HTTP face, with the fixtures as supervised stdio servers), "+
		"self (each fixture's own HTTP server: the baseline), or both")

func TestMain(m *testing.M) {
	if os.Getenv(envDriver) != "" {
		os.Exit(clientDriver(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
