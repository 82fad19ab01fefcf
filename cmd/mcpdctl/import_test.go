package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImportWrite(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(src, []byte(`{"mcpServers": {"fs": {"command": "npx"}}}`), 0o600)
	dest := filepath.Join(dir, "mcpd", "config.json")
	nowhere := filepath.Join(dir, "none.sock")
	r := mcpdctl(t, "--socket", nowhere, "config", "import", src, "--write", "--config", dest)
	if r.code != exitOK || !strings.Contains(r.stdout, "start mcpd to use it (mcpd --config "+dest+")") {
		t.Fatalf("import --write with no mcpd: %+v", r)
	}
	data, err := os.ReadFile(dest)
	if err != nil || !strings.Contains(string(data), `"fs"`) {
		t.Fatalf("written config %q: %v", data, err)
	}
	r = mcpdctl(t, "config", "import", src, "--write", "--config", dest)
	if r.code != exitFailure || !strings.Contains(r.stderr, "already exists; use --merge to add the imported servers to it, or --force") {
		t.Errorf("second import without --force: %+v", r)
	}
	// A running mcpd that reads another file is not told to reload.
	_, sock := startFake(t) // reads /home/u/.config/mcpd/config.json
	r = mcpdctl(t, "--socket", sock, "config", "import", src, "--write", "--force", "--config", dest)
	if r.code != exitOK || !strings.Contains(r.stdout, "the running mcpd reads /home/u/.config/mcpd/config.json, not this file") {
		t.Errorf("import --force with another mcpd running: %+v", r)
	}
}

// importSteps runs each command line in turn against no mcpd and returns
// their transcripts, each followed by the config file at dest when it
// changed; dir (the test's temporary directory) reads TMP, and the absolute
// path of testdata TESTDATA.
func importSteps(t *testing.T, dir, dest string, steps ...[]string) string {
	t.Helper()
	nowhere := filepath.Join(dir, "none.sock")
	var b strings.Builder
	before, _ := os.ReadFile(dest)
	for _, args := range steps {
		r := mcpdctl(t, append([]string{"--socket", nowhere}, args...)...)
		b.WriteString(r.transcript(args, ""))
		if data, err := os.ReadFile(dest); err == nil && string(data) != string(before) {
			b.WriteString("--- " + dest + "\n")
			b.Write(data)
			before = data
		}
		b.WriteString("\n")
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(dir, "TMP", abs, "TESTDATA").Replace(b.String())
}

// TestImportGolden imports each host's config as the host writes it, then
// runs config check on what was written: the file runs under mcpd, or
// import and check both exit 1 and say what is left to fill in.
func TestImportGolden(t *testing.T) {
	setImportPath(t)
	t.Setenv("HOME", "/home/u")
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	t.Setenv("BRAVE_API_KEY", "brave_test")
	for _, tt := range []struct {
		name, src string
		env       map[string]string
	}{
		{"claude_desktop", "claude-desktop/claude_desktop_config.json", nil},
		{"cursor_project", "cursor/app/.cursor/mcp.json", nil},
		{"cursor_global", "cursor/global/mcp.json", nil},
		{"vscode", "vscode/app/.vscode/mcp.json", nil},
		{"vscode_input_set", "vscode/app/.vscode/mcp.json", map[string]string{"MCP_INPUT_GITHUB_TOKEN": "ghp_input"}},
		{"zed", "zed/settings.json", nil},
		{"claude_code_project", "claude-code/app/.mcp.json", nil},
		{"claude_code_user", "claude-code/claude.json", nil},
		{"windsurf", "windsurf/mcp_config.json", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			dest := filepath.Join(dir, "config.json")
			src := filepath.Join("testdata", "import", tt.src)
			got := importSteps(t, dir, dest,
				[]string{"config", "import", src, "--write", "--config", dest},
				[]string{"config", "check", dest})
			checkGolden(t, "import_"+tt.name, got)
		})
	}
}

// TestImportMerge adds imported servers to an existing config, keeping its
// comments and servers; a second import whose server is already there is
// refused naming both entries, and the file is left as it was.
func TestImportMerge(t *testing.T) {
	setImportPath(t)
	t.Setenv("HOME", "/home/u")
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	dir := t.TempDir()
	dest := filepath.Join(dir, "config.json")
	existing, err := os.ReadFile(filepath.Join("testdata", "import", "merge", "existing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, existing, 0o600); err != nil {
		t.Fatal(err)
	}
	got := importSteps(t, dir, dest,
		[]string{"config", "import", "testdata/import/claude-desktop/claude_desktop_config.json", "--write", "--merge", "--config", dest},
		[]string{"config", "check", dest})
	checkGolden(t, "import_merge", got)
	merged, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(merged), "// My servers.") || !strings.Contains(string(merged), "// always on") {
		t.Errorf("merge lost the comments:\n%s", merged)
	}

	got = importSteps(t, dir, filepath.Join(dir, "absent"),
		[]string{"config", "import", "testdata/import/merge/clash.json", "--write", "--merge", "--config", dest})
	checkGolden(t, "import_merge_clash", got)
	after, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(merged) {
		t.Errorf("a clashing merge changed the file:\n%s", after)
	}
}

// An empty config file is written afresh by --merge, and --merge and
// --force go with --write only.
func TestImportMergeEmptyAndUsage(t *testing.T) {
	setImportPath(t)
	dir := t.TempDir()
	dest := filepath.Join(dir, "config.json")
	os.WriteFile(dest, nil, 0o600)
	r := mcpdctl(t, "--socket", filepath.Join(dir, "none.sock"), "config", "import", "testdata/import/zed/settings.json", "--write", "--merge", "--config", dest)
	if data, _ := os.ReadFile(dest); r.code != exitOK || !strings.Contains(string(data), `"postgres"`) {
		t.Errorf("merge into an empty file: %+v\n%s", r, data)
	}
	for _, args := range [][]string{{"--merge"}, {"--write", "--merge", "--force"}, {"--force"}} {
		r := mcpdctl(t, append([]string{"config", "import", "x.json"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("config import %v: exit %d, want usage error: %s", args, r.code, r.stderr)
		}
	}
}

// setImportPath makes PATH the stand-ins of the programs the sample configs
// run (npx, uvx, …), so that the commands mcpd would look up are found
// whatever this machine has installed.
func setImportPath(t *testing.T) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("testdata", "import", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}
