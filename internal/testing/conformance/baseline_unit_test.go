package conformance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseExpectations(t *testing.T) {
	exps, err := parseExpectations(strings.NewReader(`
# comment
legacy-ts tools-call-sampling   the reason
mcpd/modern-go caching:etag-present  only behind mcpd
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []expectation{
		{run: "legacy-ts", scenario: "tools-call-sampling", reason: "the reason", line: 3},
		{target: "mcpd", run: "modern-go", scenario: "caching", check: "etag-present", reason: "only behind mcpd", line: 4},
	}
	if !reflect.DeepEqual(exps, want) {
		t.Fatalf("got %+v\nwant %+v", exps, want)
	}
}

func TestParseExpectationsRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"legacy-ts tools-list", "needs a reason"},
		{"other/legacy-ts tools-list why", `target "other"`},
		{"legacy-ts tools-list: why", "SCENARIO:CHECK"},
		{"legacy-ts :x why", "SCENARIO:CHECK"},
		{"legacy-ts dns-rebinding-protection why", "may not be an expected failure"},
		{"legacy-ts a why\nlegacy-ts a again", "repeats line 1"},
	} {
		_, err := parseExpectations(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// TestExpectedFailuresFile keeps the checked-in file parseable.
func TestExpectedFailuresFile(t *testing.T) {
	exps, err := loadExpectations("expected-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]bool{}
	for _, r := range suiteRuns {
		runs[r.name] = true
	}
	for _, r := range clientRuns {
		runs[r.name] = true
	}
	for _, e := range exps {
		if !runs[e.run] {
			t.Errorf("line %d: unknown run %q", e.line, e.run)
		}
	}
}

func TestJudge(t *testing.T) {
	ok := check{ID: "a", Status: "SUCCESS"}
	bad := func(id string) check { return check{ID: id, Status: "FAILURE", ErrorMessage: "broken " + id} }
	results := map[string][]check{
		"whole":    {bad("w1"), bad("w2")},
		"one":      {ok, bad("c1"), bad("c2")},
		"passing":  {ok},
		"surprise": {ok, bad("s1"), {ID: "warn", Status: "WARNING"}},
	}
	exps, err := parseExpectations(strings.NewReader(`
r whole    known
r one:c1   known check
r passing  was broken
r missing  was broken
r surprise:zzz  not this check
self/r surprise  only on self
other-run surprise  another run
`))
	if err != nil {
		t.Fatal(err)
	}
	v := judge("mcpd", "r", results, exps)
	wantUnexpected := []string{"one:c2: broken c2", "surprise:s1: broken s1"}
	if !reflect.DeepEqual(v.unexpected, wantUnexpected) {
		t.Errorf("unexpected = %q, want %q", v.unexpected, wantUnexpected)
	}
	if len(v.stale) != 3 || !strings.Contains(v.stale[0], "passing") || !strings.Contains(v.stale[1], "did not run") ||
		!strings.Contains(v.stale[2], "surprise:zzz") {
		t.Errorf("stale = %q, want passing, missing and surprise:zzz", v.stale)
	}
	if len(v.expected) != 2 {
		t.Errorf("expected = %q, want whole and one:c1", v.expected)
	}
	if v := judge("self", "r", results, exps); len(v.unexpected) != 1 || v.unexpected[0] != "one:c2: broken c2" {
		t.Errorf("on self: unexpected = %q, want only one:c2", v.unexpected)
	}
}

func TestParseResults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "checks.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("server-tools-list-2026-12-01T12-40-16-625Z", `[{"id":"tools-list","status":"SUCCESS"}]`)
	write("server-caching-2026-12-01T12-40-17-196Z", `[{"id":"etag","status":"FAILURE","errorMessage":"no etag"}]`)
	out := "=== SUMMARY ===\n✓ tools-list: 1 passed, 0 failed\n✗ caching: 0 passed, 1 failed\n" +
		"✗ threw: 0 passed, 1 failed\n✓ empty: 0 passed, 0 failed\n  ✗ caching (extension)\n"
	results, err := parseResults(out, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("got scenarios %v, want tools-list, caching, threw, empty", results)
	}
	if c := results["caching"]; len(c) != 1 || !c[0].failed() || c[0].why() != "no etag" {
		t.Errorf("caching = %+v", c)
	}
	if c := results["threw"]; len(c) != 1 || c[0].ID != "threw" || !c[0].failed() {
		t.Errorf("threw = %+v, want one failing check named after the scenario", c)
	}
	// A run of one scenario prints no summary: its results are read.
	if one, err := parseResults("Passed: 1/1, 0 failed", dir); err != nil || len(one) != 2 {
		t.Errorf("output of one scenario = %v, %v, want the two result directories", one, err)
	}
	if _, err := parseResults("crashed", t.TempDir()); err == nil {
		t.Error("output without a summary nor results: no error")
	}
}
