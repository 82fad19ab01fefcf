package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFlagsSubscriptionQueue(t *testing.T) {
	f, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.queueEvents != 1024 || f.queueBytes != 8<<20 {
		t.Errorf("defaults = %d events / %d bytes, want 1024 / 8 MiB", f.queueEvents, f.queueBytes)
	}
	f, err = parseFlags([]string{"--subscription-queue-events", "16", "--subscription-queue-bytes", "4096"}, io.Discard)
	if err != nil || f.queueEvents != 16 || f.queueBytes != 4096 {
		t.Errorf("parseFlags = %+v, %v; want 16 events / 4096 bytes", f, err)
	}
	for _, bad := range [][]string{{"--subscription-queue-events", "0"}, {"--subscription-queue-bytes", "-1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("parseFlags(%v) = %v, want a must-be-positive error", bad, err)
		}
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("parseFlags accepted a positional argument")
	}
}

// TestLoggerNoStacktrace: an error line carries its message and fields but
// no Go stack, in either format.
func TestLoggerNoStacktrace(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		cfg, err := loggerConfig("info", format)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "log")
		cfg.OutputPaths = []string{path}
		log, err := cfg.Build()
		if err != nil {
			t.Fatal(err)
		}
		log.Error("server in crash loop")
		_ = log.Sync()
		out, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); !strings.Contains(got, "server in crash loop") ||
			strings.Contains(got, "stacktrace") || strings.Contains(got, "TestLoggerNoStacktrace") {
			t.Errorf("%s: error line = %q, want the message without a stack trace", format, got)
		}
	}
}

// Every line of a multi-line error (a config with several errors) says
// where it comes from.
func TestPrintErrorPrefixesEveryLine(t *testing.T) {
	var b strings.Builder
	printError(&b, errors.Join(errors.New(`config: server "a": key "cmd": unknown`), errors.New(`config: server "b": empty command`)))
	want := "mcpd: config: server \"a\": key \"cmd\": unknown\nmcpd: config: server \"b\": empty command\n"
	if b.String() != want {
		t.Fatalf("printed %q, want %q", b.String(), want)
	}
}

func TestParseFlagsRequestMemoryBudget(t *testing.T) {
	f, err := parseFlags(nil, io.Discard)
	if err != nil || f.requestBudget != 256<<20 {
		t.Fatalf("default budget = %d, %v; want 256 MiB", f.requestBudget, err)
	}
	f, err = parseFlags([]string{"--request-memory-budget", "1073741824"}, io.Discard)
	if err != nil || f.requestBudget != 1<<30 {
		t.Errorf("parseFlags = %d, %v; want 1 GiB", f.requestBudget, err)
	}
	for _, bad := range []string{"0", "-1", "1048576"} {
		if _, err := parseFlags([]string{"--request-memory-budget", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "at least the largest request") {
			t.Errorf("--request-memory-budget %s: %v, want refused", bad, err)
		}
	}
}
