package metrics

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main() // exits the process when MCPD_FAKE is set
	goleak.VerifyTestMain(m)
}
