package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

// devIno is f's "<device>:<inode>", as systemd writes it in JOURNAL_STREAM.
func devIno(t *testing.T, f *os.File) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", uint64(st.Dev), st.Ino) // Dev is not uint64 everywhere
}

// JOURNAL_STREAM names stderr only when its device and inode are the
// file's own.
func TestJournalStreamMatchesDevInode(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := os.Create(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for env, want := range map[string]bool{
		"":                      false,
		devIno(t, f):            true,
		devIno(t, other):        false,
		"garbage":               false,
		devIno(t, f) + "x":      false,
		strings.Repeat("9", 30): false,
	} {
		t.Setenv("JOURNAL_STREAM", env)
		if got := journalStream(f); got != want {
			t.Errorf("JOURNAL_STREAM=%q: journalStream = %v, want %v", env, got, want)
		}
	}
}

// Under journald every line, in either format, starts with the syslog
// priority of its level (sd-daemon.h); without it, none does.
func TestLoggerJournalPriorityPrefix(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		for _, journal := range []bool{true, false} {
			cfg, err := loggerConfig("debug", format)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log := buildLogger(cfg, zapcore.AddSync(&buf), journal)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("%s: %d lines: %q", format, len(lines), buf.String())
			}
			for i, want := range []string{"<7>", "<6>", "<4>", "<3>"} {
				if got := strings.HasPrefix(lines[i], want); got != journal {
					t.Errorf("%s, journal %v: line %q: prefix %s is %v", format, journal, lines[i], want, got)
				}
				if journal && strings.HasPrefix(lines[i], "<") && format == "json" &&
					!json.Valid([]byte(strings.TrimPrefix(lines[i], want))) {
					t.Errorf("json line %q is not JSON after its prefix", lines[i])
				}
			}
		}
	}
}

// The JSON format writes ISO-8601 times, not epoch seconds.
func TestLoggerJSONTimeISO8601(t *testing.T) {
	cfg, err := loggerConfig("info", "json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buildLogger(cfg, zapcore.AddSync(&buf), false).Info("hello")
	var line struct {
		TS any `json:"ts"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	ts, ok := line.TS.(string)
	if !ok {
		t.Fatalf("ts = %v (%T), want an ISO-8601 string", line.TS, line.TS)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
		t.Errorf("ts %q: %v", ts, err)
	}
}

// The note of dropped log entries is an entry of the daemon's own log: a
// warning, in its format, with its priority under journald.
func TestDroppedNoteIsAWarningOfTheLog(t *testing.T) {
	for _, journal := range []bool{false, true} {
		cfg, err := loggerConfig("error", "json") // the note is written whatever the level
		if err != nil {
			t.Fatal(err)
		}
		line := string(droppedNote(cfg, journal)(42))
		if journal {
			var ok bool
			if line, ok = strings.CutPrefix(line, "<4>"); !ok {
				t.Fatalf("note %q has no warning priority", line)
			}
		}
		var e struct {
			Level, Logger, Msg string
			Dropped            int
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || !strings.HasSuffix(line, "\n") {
			t.Fatalf("note %q: %v", line, err)
		}
		if e.Level != "warn" || e.Logger != "log" || e.Dropped != 42 || !strings.HasPrefix(e.Msg, "log output too slow") {
			t.Fatalf("note %+v", e)
		}
	}
}
