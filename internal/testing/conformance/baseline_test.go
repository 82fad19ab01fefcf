package conformance

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// expectation is one line of expected-failures.txt: a scenario (or one check
// of it) that a run is known to fail, and why.
type expectation struct {
	target string // "self", "mcpd", or "" for both
	run    string // run name, e.g. "legacy-ts"
	// scenario fails as a whole when check is "", else only check may fail.
	scenario, check string
	reason          string
	line            int
}

// entry is the scenario[:check] form the expectation was written in.
func (e expectation) entry() string {
	if e.check == "" {
		return e.scenario
	}
	return e.scenario + ":" + e.check
}

// appliesTo reports whether e is about run on target.
func (e expectation) appliesTo(target, run string) bool {
	return e.run == run && (e.target == "" || e.target == target)
}

// neverExpected lists scenarios no run may accept as failing.
var neverExpected = map[string]string{
	"dns-rebinding-protection": "a localhost server must reject foreign Host/Origin headers",
}

// loadExpectations reads an expected-failures file (format in README.md).
func loadExpectations(path string) ([]expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open expected failures: %w", err)
	}
	defer f.Close()
	exps, err := parseExpectations(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return exps, nil
}

// parseExpectations parses lines of "[TARGET/]RUN SCENARIO[:CHECK] REASON...";
// blank lines and lines starting with # are ignored.
func parseExpectations(r io.Reader) ([]expectation, error) {
	var exps []expectation
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: want \"[TARGET/]RUN SCENARIO[:CHECK] REASON\", got %q (every entry needs a reason)", n, line)
		}
		e := expectation{run: fields[0], reason: strings.Join(fields[2:], " "), line: n}
		if t, run, ok := strings.Cut(e.run, "/"); ok {
			if t != "self" && t != "mcpd" {
				return nil, fmt.Errorf("line %d: target %q: want self or mcpd", n, t)
			}
			e.target, e.run = t, run
		}
		e.scenario, e.check, _ = strings.Cut(fields[1], ":")
		if e.scenario == "" || strings.HasSuffix(fields[1], ":") {
			return nil, fmt.Errorf("line %d: %q: want SCENARIO or SCENARIO:CHECK", n, fields[1])
		}
		if why, ok := neverExpected[e.scenario]; ok {
			return nil, fmt.Errorf("line %d: %s may not be an expected failure: %s", n, e.scenario, why)
		}
		key := e.target + "/" + e.run + " " + e.entry()
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("line %d: %s %s repeats line %d", n, fields[0], e.entry(), prev)
		}
		seen[key] = n
		exps = append(exps, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read expected failures: %w", err)
	}
	return exps, nil
}

// verdict is what a run's results mean against the expectations.
type verdict struct {
	unexpected []string // failing scenario:check pairs nobody expected
	stale      []string // expectations that did not fail
	expected   []string // failures that were expected, with their reason
}

// judge compares the results of run on target with the expectations.
func judge(target, run string, results map[string][]check, exps []expectation) verdict {
	var v verdict
	covered := map[string]bool{} // scenario or scenario:check an expectation names
	for _, e := range exps {
		if !e.appliesTo(target, run) {
			continue
		}
		covered[e.entry()] = true
		checks, ran := results[e.scenario]
		failed := false
		for _, c := range checks {
			failed = failed || (c.failed() && (e.check == "" || c.ID == e.check))
		}
		switch {
		case !ran:
			v.stale = append(v.stale, fmt.Sprintf("%s (line %d): scenario did not run", e.entry(), e.line))
		case !failed:
			v.stale = append(v.stale, fmt.Sprintf("%s (line %d): passes now; remove the entry", e.entry(), e.line))
		default:
			v.expected = append(v.expected, e.entry()+": "+e.reason)
		}
	}
	for scenario, checks := range results {
		for _, c := range checks {
			if c.failed() && !covered[scenario] && !covered[scenario+":"+c.ID] {
				v.unexpected = append(v.unexpected, fmt.Sprintf("%s:%s: %s", scenario, c.ID, c.why()))
			}
		}
	}
	sort.Strings(v.unexpected)
	return v
}
