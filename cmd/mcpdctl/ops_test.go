package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// fakeBadConfig is the config path of the fake's rejected reload.
const fakeBadConfig = "/home/u/.config/mcpd/config.json"

func (f *fakeMcpd) ReloadConfig(ctx context.Context, _ *mcpdv1.ReloadConfigRequest) (*mcpdv1.ReloadConfigResponse, error) {
	f.mu.Lock()
	bad := f.reloadBad
	f.mu.Unlock()
	if bad {
		return &mcpdv1.ReloadConfigResponse{
			ConfigPath: fakeBadConfig,
			Error:      fakeBadConfig + `: server "weather": key "requestTimeout": invalid duration "soon"`,
			Problems: []*mcpdv1.ConfigProblem{
				{Path: fakeBadConfig, Server: "weather", Key: "requestTimeout", Message: `invalid duration "soon"`},
				{Path: fakeBadConfig, Line: 3, Column: 7, Message: "invalid character '}'"},
			},
		}, nil
	}
	return &mcpdv1.ReloadConfigResponse{
		ConfigPath: "/home/u/.config/mcpd/config.json",
		Applied:    true,
		Diff:       &mcpdv1.ConfigDiff{Added: []string{"github"}, Removed: []string{"idle"}, Restarted: []string{"notes"}, Updated: []string{"weather"}, Unchanged: []string{"looping"}},
	}, nil
}

func (f *fakeMcpd) CheckConfig(_ context.Context, r *mcpdv1.CheckConfigRequest) (*mcpdv1.CheckConfigResponse, error) {
	if strings.Contains(string(r.GetContent()), "bad") {
		return &mcpdv1.CheckConfigResponse{ConfigPath: r.GetPath(), Error: "bad",
			Problems: []*mcpdv1.ConfigProblem{{Path: r.GetPath(), Server: "bad", Message: `missing required key "command"`}}}, nil
	}
	return &mcpdv1.CheckConfigResponse{ConfigPath: r.GetPath(), Valid: true,
		Diff: &mcpdv1.ConfigDiff{Added: []string{"x"}, Unchanged: []string{"weather"}}}, nil
}

func (f *fakeMcpd) FollowLogs(r *mcpdv1.FollowLogsRequest, stream grpc.ServerStreamingServer[mcpdv1.FollowLogsResponse]) error {
	texts := []string{"mcpd line 1", "mcpd line 2"}
	if r.GetName() != "" {
		texts = []string{"child line " + r.GetName()}
	}
	for _, s := range texts {
		if err := stream.Send(&mcpdv1.FollowLogsResponse{Line: &mcpdv1.LogLine{TimeUnixMs: 1, Pid: 7, Text: s}}); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.followers++
	f.mu.Unlock()
	<-stream.Context().Done() // a follow never ends by itself
	return nil
}

func TestOpsGolden(t *testing.T) {
	f, sock := startFake(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"x": {"command": "x"}}}`), 0o600)
	os.WriteFile(bad, []byte(`{"mcpServers": {"bad": {}}}`), 0o600)
	tests := []struct {
		name string
		args []string
		bad  bool
	}{
		{"reload", []string{"reload"}, false},
		{"reload_json", []string{"reload", "--json"}, false},
		{"reload_invalid", []string{"reload"}, true},
		{"reload_invalid_json", []string{"reload", "--json"}, true},
		{"config_check", []string{"config", "check", good}, false},
		{"config_check_invalid", []string{"config", "check", bad}, false},
		{"config_check_json", []string{"config", "check", good, "--json"}, false},
		{"config_bad_action", []string{"config", "frob"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.reloadBad = tt.bad
			f.mu.Unlock()
			r := mcpdctl(t, append([]string{"--socket", sock}, tt.args...)...)
			checkGolden(t, tt.name, strings.ReplaceAll(r.transcript(tt.args, sock), dir, "DIR"))
		})
	}
}

func TestConfigCheckWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"x": {"command": "/bin/sh"}}}`), 0o600)
	os.WriteFile(bad, []byte("{\"mcpServers\": {\"x\": {\"command\": \"x\", \"requestTimeout\": \"soon\"}}}"), 0o600)
	nosock := filepath.Join(dir, "none.sock")
	r := mcpdctl(t, "--socket", nosock, "config", "check", good)
	if r.code != exitOK || r.stdout != good+": valid; servers: x\n  (mcpd is not running: nothing to compare with)\n" {
		t.Errorf("valid file without mcpd: %+v", r)
	}
	r = mcpdctl(t, "--socket", nosock, "config", "check", bad)
	want := bad + `: server "x": key "requestTimeout": invalid duration "soon"` + "\nmcpdctl: config is invalid\n"
	if r.code != exitFailure || r.stderr != want {
		t.Errorf("invalid file without mcpd: exit %d stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
}

func TestLogsFollow(t *testing.T) {
	f, sock := startFake(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "-f"}, "mcpd line 1\nmcpd line 2\n"},
		{[]string{"logs", "weather", "-f"}, "child line weather\n"},
	} {
		f.mu.Lock()
		before := f.followers
		f.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr syncWriter
		done := make(chan error, 1)
		go func() { done <- run(ctx, append([]string{"--socket", sock}, tt.args...), &stdout, &stderr) }()
		// Wait until the fake sent everything and waits, then "Ctrl-C".
		waitUntil(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.followers > before && stdout.String() == tt.want
		})
		cancel()
		err := <-done
		if code := report(err, &stderr); code != exitOK {
			t.Errorf("%v: exit %d after Ctrl-C, stderr %q", tt.args, code, stderr.String())
		}
	}
}
