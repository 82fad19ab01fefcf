package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serverJSON returns a valid config whose single server's args hold tag, so
// each version of the file is distinct and recognisable.
func serverJSON(tag string) []byte {
	return []byte(fmt.Sprintf(`{"mcpServers": {"demo": {"command": "/bin/demo", "args": [%q]}}}`, tag))
}

func tagOf(t *testing.T, c Change) string {
	t.Helper()
	if c.Err != nil {
		t.Fatalf("change carries error %v, want a config", c.Err)
	}
	if len(c.Config.Servers) != 1 || len(c.Config.Servers[0].Args) != 1 {
		t.Fatalf("unexpected config %+v", c.Config)
	}
	return c.Config.Servers[0].Args[0]
}

// atomicWrite saves data the way careful editors do: a temporary file in the
// same directory, renamed over the target.
func atomicWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// startWatcher runs w until the test ends and checks that Run returns nil.
func startWatcher(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// next waits for the next change. The deadline only turns a hang into a
// failure; it is not part of what is tested.
func next(t *testing.T, w *Watcher) Change {
	t.Helper()
	select {
	case c := <-w.Changes():
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no change delivered")
		return Change{}
	}
}

// none asserts that no change is pending right now. It is only meaningful
// after a synchronous check, where delivery has already happened or not.
func none(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case c := <-w.Changes():
		t.Fatalf("unexpected change: config %+v, err %v", c.Config, c.Err)
	default:
	}
}

// TestWatcherCheck drives the content comparison directly, without fsnotify,
// so that "nothing is delivered" can be asserted without waiting.
func TestWatcherCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	atomicWrite(t, path, serverJSON("a"))
	cfg, err := Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(path, cfg)

	w.check(t.Context()) // unchanged since Load
	none(t, w)

	atomicWrite(t, path, serverJSON("b"))
	w.check(t.Context())
	if got := tagOf(t, next(t, w)); got != "b" {
		t.Errorf("tag = %q, want b", got)
	}

	atomicWrite(t, path, serverJSON("b")) // same bytes, new inode and mtime
	w.check(t.Context())
	none(t, w)

	if err := os.WriteFile(path, []byte(`{"mcpServers": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w.check(t.Context())
	c := next(t, w)
	var ce *Error
	if c.Config != nil || !errors.As(c.Err, &ce) || ce.Msg != `want an object, got array` {
		t.Errorf("invalid file: got config %+v, err %v; want a *Error", c.Config, c.Err)
	}
	w.check(t.Context()) // still the same invalid bytes
	none(t, w)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.check(t.Context())
	if c := next(t, w); !errors.Is(c.Err, fs.ErrNotExist) || c.Config != nil {
		t.Errorf("removed file: got config %+v, err %v; want fs.ErrNotExist", c.Config, c.Err)
	}
	w.check(t.Context())
	none(t, w)

	atomicWrite(t, path, serverJSON("b")) // same bytes as before the removal
	w.check(t.Context())
	if got := tagOf(t, next(t, w)); got != "b" {
		t.Errorf("tag = %q, want b", got)
	}
}

// TestWatcherCoalescesUndelivered checks that a receiver that falls behind
// sees the latest state, not a stale one.
func TestWatcherCoalescesUndelivered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	w := NewWatcher(path, nil)
	for _, tag := range []string{"1", "2", "3"} {
		atomicWrite(t, path, serverJSON(tag))
		w.check(t.Context())
	}
	if got := tagOf(t, next(t, w)); got != "3" {
		t.Errorf("tag = %q, want 3", got)
	}
	none(t, w)
}

// TestWatcherRapidSaves: 20 atomic saves in a burst deliver one change with
// the final content; the next save is delivered on its own.
func TestWatcherRapidSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	atomicWrite(t, path, serverJSON("initial"))
	cfg, err := Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(path, cfg)
	// Longer than the default so that a loaded CI machine pausing the test
	// between two saves does not split the burst.
	w.Debounce = time.Second
	startWatcher(t, w)
	// Once a change has been delivered the watch is certainly in place, so
	// the burst below is seen as events, not by the initial check.
	atomicWrite(t, path, serverJSON("ready"))
	if got := tagOf(t, next(t, w)); got != "ready" {
		t.Fatalf("tag = %q, want ready", got)
	}

	for i := 1; i <= 20; i++ {
		atomicWrite(t, path, serverJSON(fmt.Sprintf("save-%d", i)))
	}
	if got := tagOf(t, next(t, w)); got != "save-20" {
		t.Fatalf("first change has tag %q, want save-20 (the burst was not coalesced)", got)
	}
	// Had any intermediate save been delivered separately, it would have
	// come first; a later save must now arrive on its own.
	atomicWrite(t, path, serverJSON("marker"))
	if got := tagOf(t, next(t, w)); got != "marker" {
		t.Fatalf("change after the burst has tag %q, want marker", got)
	}
	// ready, the burst, marker: any other emission (delivered or replaced
	// before delivery) means the burst was split.
	if n := w.emitted.Load(); n != 3 {
		t.Errorf("%d changes emitted, want 3", n)
	}
}

// TestWatcherLifecycle follows the file through creation, invalid content,
// identical re-save, in-place write and removal, with the default debounce.
func TestWatcherLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	w := NewWatcher(path, nil) // no file yet
	startWatcher(t, w)

	// Unrelated files in the directory are ignored; the next change is the
	// config's.
	atomicWrite(t, filepath.Join(dir, "other.json"), []byte("junk"))
	atomicWrite(t, path, serverJSON("created"))
	if got := tagOf(t, next(t, w)); got != "created" {
		t.Fatalf("tag = %q, want created", got)
	}

	atomicWrite(t, path, []byte(`{"mcpServers": `))
	c := next(t, w)
	if c.Err == nil || !strings.HasPrefix(c.Err.Error(), path+":1:15: unexpected end of JSON input") {
		t.Fatalf("invalid save: got config %+v, err %v", c.Config, c.Err)
	}

	// An identical save is not delivered, so the next change is the
	// in-place write after it. (TestWatcherCheck asserts the comparison
	// deterministically; here the two saves may share one debounce window.)
	atomicWrite(t, path, []byte(`{"mcpServers": `))
	if err := os.WriteFile(path, serverJSON("in-place"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tagOf(t, next(t, w)); got != "in-place" {
		t.Fatalf("tag = %q, want in-place", got)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if c := next(t, w); !errors.Is(c.Err, fs.ErrNotExist) {
		t.Fatalf("removal: got config %+v, err %v; want fs.ErrNotExist", c.Config, c.Err)
	}
}

// TestWatcherCatchesUpAtStart: a change made after the caller loaded the
// config but before the watch was set up is delivered.
func TestWatcherCatchesUpAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	atomicWrite(t, path, serverJSON("loaded"))
	cfg, err := Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	atomicWrite(t, path, serverJSON("changed-before-run"))
	w := NewWatcher(path, cfg)
	startWatcher(t, w)
	if got := tagOf(t, next(t, w)); got != "changed-before-run" {
		t.Fatalf("tag = %q, want changed-before-run", got)
	}
}

// TestWatcherDirectoryCreatedLater: with no config directory yet, creating
// it and then the file delivers the config; removing the whole directory is
// seen, and so is creating it again.
func TestWatcherDirectoryCreatedLater(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	path := filepath.Join(dir, "config.json")
	w := NewWatcher(path, nil)
	startWatcher(t, w)

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	atomicWrite(t, path, serverJSON("late"))
	if got := tagOf(t, next(t, w)); got != "late" {
		t.Fatalf("tag = %q, want late", got)
	}

	if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if c := next(t, w); !errors.Is(c.Err, fs.ErrNotExist) {
		t.Fatalf("removal: got config %+v, err %v; want fs.ErrNotExist", c.Config, c.Err)
	}

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	atomicWrite(t, path, serverJSON("again"))
	if got := tagOf(t, next(t, w)); got != "again" {
		t.Fatalf("tag = %q, want again", got)
	}
}

func TestWatcherUnwatchableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "sub") // a directory below a regular file
	w := NewWatcher(filepath.Join(dir, "config.json"), nil)
	// The timeout only turns a hang into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := w.Run(ctx)
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("watch config directory %q: ", dir)) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Run = %v, want an error naming %q", err, dir)
	}
}

// TestWatcherNonRegularReplacement: a config replaced by a FIFO or by a
// symlink to /dev/zero is delivered as an error at once (the open must not
// wait for a writer, the read must not run without end), and Run still
// returns when its context is done.
func TestWatcherNonRegularReplacement(t *testing.T) {
	for _, tt := range []struct {
		name   string
		make   func(t *testing.T, path string)
		reason string
	}{
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe"},
		{"symlink_to_dev_zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "a character device"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.json")
			atomicWrite(t, path, serverJSON("valid"))
			cfg, err := Load(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			w := NewWatcher(path, cfg)
			w.Debounce = 10 * time.Millisecond
			startWatcher(t, w)
			tmp := filepath.Join(dir, ".config.tmp")
			tt.make(t, tmp)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			c := next(t, w)
			if !errors.Is(c.Err, ErrNotRegular) || !strings.Contains(c.Err.Error(), path) || !strings.Contains(c.Err.Error(), tt.reason) {
				t.Fatalf("replacement by %s: config %+v, err %v; want ErrNotRegular naming %s", tt.name, c.Config, c.Err, tt.reason)
			}
		})
	}
}
