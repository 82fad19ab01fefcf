package core

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main() // a fake MCP server when the test spawns itself as one (localops_test.go)
	goleak.VerifyTestMain(m)
}
