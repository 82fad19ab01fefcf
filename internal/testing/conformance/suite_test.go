package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// check is one entry of a scenario's checks.json, as the suite writes it.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage"`
}

func (c check) failed() bool { return c.Status == "FAILURE" }

// why is the check's error message, or its description when it has none.
func (c check) why() string {
	msg := c.ErrorMessage
	if msg == "" {
		msg = c.Description
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

// suite is one installed release of the conformance suite.
type suite struct {
	node  string // Node 22 binary
	entry string // the release's dist/index.js
}

// findSuite locates Node 22 and the suite release installed under the npm
// alias pkg in root/node_modules.
func findSuite(root, pkg string) (suite, error) {
	nm := filepath.Join(root, "node_modules")
	node := filepath.Join(nm, "node", "bin", "node")
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return suite{}, fmt.Errorf("node 22 from npm package node: %s: %w (run npm ci in %s)", node, err, root)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		return suite{}, fmt.Errorf("%s is node %s, the conformance suite wants node 22 (run npm ci in %s)", node, v, root)
	}
	entry := filepath.Join(nm, pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		return suite{}, fmt.Errorf("conformance suite %s: %w (run npm ci in %s)", pkg, err, root)
	}
	return suite{node: node, entry: entry}, nil
}

// summaryLine is one scenario's line in the suite's SUMMARY section.
var summaryLine = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed$`)

// resultDir is a scenario's result directory: server-NAME-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// run runs "conformance server --url url args..." with results written under
// outDir, and returns each scenario's checks plus the suite's output.
func (s suite) run(ctx context.Context, url, outDir string, args ...string) (map[string][]check, string, error) {
	argv := append([]string{s.entry, "server", "--url", url, "-o", outDir}, args...)
	cmd := exec.CommandContext(ctx, s.node, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		return nil, out.String(), fmt.Errorf("run conformance suite: %w", errors.Join(err, ctx.Err()))
	}
	results, perr := parseResults(out.String(), outDir)
	if perr != nil {
		return nil, out.String(), fmt.Errorf("conformance suite (%v): %w", err, perr)
	}
	return results, out.String(), nil
}

// parseResults reads the scenario list from the suite's summary and each
// scenario's checks from its checks.json. A scenario the suite counts as
// failed without a checks.json (it threw) gets one failing check of its own
// name, as the suite itself records it.
func parseResults(output, outDir string) (map[string][]check, error) {
	// A run of one scenario (--scenario) prints no summary: its result
	// directory is all there is.
	summary := summaryLine.FindAllStringSubmatch(output, -1)
	results := map[string][]check{}
	dirs, err := os.ReadDir(outDir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	for _, d := range dirs {
		m := resultDir.FindStringSubmatch(d.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(outDir, d.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("results of %s: %w", m[1], err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("results of %s: %w", m[1], err)
		}
		results[m[1]] = append(results[m[1]], checks...)
	}
	if len(summary) == 0 && len(results) == 0 {
		return nil, fmt.Errorf("no scenario summary and no results in the suite's output")
	}
	for _, m := range summary {
		name := m[1]
		failed, _ := strconv.Atoi(m[3])
		if _, ok := results[name]; !ok {
			results[name] = nil
			if failed > 0 {
				results[name] = []check{{ID: name, Status: "FAILURE", Description: "the scenario did not run to the end (see the suite's output)"}}
			}
		}
	}
	return results, nil
}
