package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main() // exits when this binary runs as a fake MCP server
	goleak.VerifyTestMain(m)
}
