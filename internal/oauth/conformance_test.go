package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The conformance suite's auth client scenarios this package passes, run
// with the test binary as the client (conformance_driver_test.go) against
// the suite's own authorization and resource servers. Not here: CIMD
// (auth/basic-cimd passes with a warning that mcpd registers dynamically
// instead), the extensions (client credentials, DPoP, workload identity,
// enterprise-managed authorization), and 0.1.16's
// auth/2025-03-26-oauth-metadata-backcompat, whose authorization server
// metadata names an issuer other than the one it is fetched for, which the
// 2026-07-28 spec says a client must not use (0.2.0 fixed the scenario).
var conformanceScenarios = map[string][]string{
	"conformance": {
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
		"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
		"auth/pre-registration",
		"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
		"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
		"auth/authorization-server-migration",
		"auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing",
		"auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
		"auth/metadata-issuer-mismatch",
	},
	"conformance-legacy": {
		"auth/metadata-default", "auth/pre-registration", "auth/scope-step-up",
		"auth/token-endpoint-auth-basic", "auth/2025-03-26-oauth-endpoint-fallback",
	},
}

func TestConformanceAuthScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP conformance suite (Node)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(root, "node_modules", "node", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Skipf("node 22 not installed (npm ci in %s): %v", root, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for pkg, scenarios := range conformanceScenarios {
		entry := filepath.Join(root, "node_modules", pkg, "dist", "index.js")
		if _, err := os.Stat(entry); err != nil {
			t.Errorf("conformance suite %s not installed (npm ci in %s): %v", pkg, root, err)
			continue
		}
		for _, sc := range scenarios {
			t.Run(pkg+"/"+sc, func(t *testing.T) {
				t.Parallel() // each scenario has its own servers and ports
				runScenario(t, node, entry, self, sc)
			})
		}
	}
}

// runScenario runs one client scenario and fails on any FAILURE check.
func runScenario(t *testing.T, node, entry, driver, scenario string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, node, entry, "client", "--scenario", scenario,
		"--command", driver, "--timeout", "60000", "-o", out)
	cmd.Env = append(os.Environ(), envDriver+"=1", "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 5 * time.Second
	output, runErr := cmd.CombinedOutput()
	checks, err := readChecks(out)
	if err != nil {
		t.Fatalf("%v (suite: %v)\n%s", err, runErr, tail(string(output), 3000))
	}
	failed := 0
	for _, c := range checks {
		if c.Status == "FAILURE" {
			failed++
			t.Errorf("%s: %s: %s", c.ID, c.Description, c.ErrorMessage)
		}
	}
	if failed > 0 {
		t.Logf("suite output:\n%s", tail(string(output), 4000))
	}
}

type confCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads the checks.json the suite wrote under dir.
func readChecks(dir string) ([]confCheck, error) {
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		return nil, fmt.Errorf("want one checks.json under %s, found %d", dir, len(found))
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		return nil, err
	}
	var cs []confCheck
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", found[0], err)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s has no checks", found[0])
	}
	return cs, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[strings.LastIndexByte(s[:len(s)-n], '\n')+1:]
}
