package dashboard

import (
	"os"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main()
	if os.Getenv(envClient) != "" {
		os.Exit(clientMain())
	}
	os.Exit(m.Run())
}
