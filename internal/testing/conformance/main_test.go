package conformance

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// defaultTarget is what the suite runs against unless -conformance.target
// says otherwise.
const defaultTarget = "both"

var targetFlag = flag.String("conformance.target", defaultTarget,
	"what the conformance suite runs against: mcpd (its HTTP face, with the fixtures as supervised stdio servers), "+
		"self (each fixture's own HTTP server: the baseline), or both")

// clientTargetFlag is what the client scenarios run with. Its default is
// mcpd alone: the Go SDK client's baseline (self) takes as long again and
// only matters when expected-failures.txt changes.
var clientTargetFlag = flag.String("conformance.client-target", "mcpd",
	"what runs the conformance client scenarios: mcpd (through a real mcpd), self (the Go SDK's conformance client: the baseline), or both")

func TestMain(m *testing.M) {
	if fakemcp.Main() { // exits the process when MCPD_FAKE is set: the skills fixtures
		return
	}
	if os.Getenv(envDriver) != "" {
		os.Exit(clientDriver(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
