package httpface

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main()
	if os.Getenv(envClient) != "" {
		os.Exit(clientMain())
	}
	goleak.VerifyTestMain(m)
}
