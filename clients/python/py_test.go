// Package python runs the Python client's tests (unittest, with the
// system python3 and Debian's grpcio and protobuf) against a real mcpd
// built from this module; the package holds that test only.
package python

import (
	"os"
	"os/exec"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/clienttest"
)

// systemPython is Debian's interpreter, the one python3-grpcio installs into.
const systemPython = "/usr/bin/python3"

func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts mcpd and its children")
	}
	python := systemPython
	if _, err := os.Stat(python); err != nil {
		python = clienttest.Require(t, "python3")
	}
	if out, err := exec.Command(python, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		clienttest.Missing(t, "grpcio and protobuf for "+python+" (apt-get install python3-grpcio python3-protobuf): "+string(out))
	}
	clienttest.Require(t, "node") // server-everything is one of the children
	env := clienttest.Build(t)
	if _, err := os.Stat(env.EverythingJS); err != nil {
		clienttest.Missing(t, "server-everything (run npm ci in the repository root)")
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests.test_client", "tests.test_aio")
	cmd.Env = append(os.Environ(), append(env.Vars(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH=.")...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s -m unittest:\n%s", python, out)
	if err != nil {
		t.Fatalf("python3 -m unittest: %v", err)
	}
}
