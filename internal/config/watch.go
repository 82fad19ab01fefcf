package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the Watcher waits after the last filesystem
// event before it reads the file.
const DefaultDebounce = 200 * time.Millisecond

// Change is a new state of the config file, delivered by Watcher.
type Change struct {
	// Config is the newly parsed config; nil if Err is set.
	Config *Config
	// Err is why the new content cannot be used: a parse error (see Error),
	// a read error, or an error wrapping fs.ErrNotExist when the file was
	// removed. The caller should keep its previous config and report Err.
	Err error
}

// Watcher watches one config file and delivers a Change each time its
// content changes. It watches the file's directory, not the file, so that
// editors that save by writing a temporary file and renaming it over the
// original (vim, VS Code, atomic writers) are seen; a symlinked config file is
// seen only when the link itself is replaced. Bursts of events are debounced,
// and a save that leaves the bytes unchanged delivers nothing.
//
// Run must be called once; Changes may be called at any time, from any
// goroutine.
type Watcher struct {
	// Debounce is the quiet time after the last event before the file is
	// read. If zero, DefaultDebounce is used. Set it before Run.
	Debounce time.Duration

	path    string
	changes chan Change

	// State of the file as last seen; owned by the Run goroutine.
	state fileState
	last  []byte // content when state == statePresent

	emitted atomic.Int64 // number of changes emitted, for tests
}

type fileState int

const (
	stateUnknown fileState = iota // not read yet, or the last read failed
	stateAbsent
	statePresent
)

// NewWatcher returns a Watcher for the config file at path. current is the
// config the caller is running, whose Data is the baseline against which
// changes are detected; nil means the file did not exist when the caller
// looked.
func NewWatcher(path string, current *Config) *Watcher {
	w := &Watcher{path: path, changes: make(chan Change, 1), state: stateAbsent}
	if current != nil {
		w.state, w.last = statePresent, current.Data
	}
	return w
}

// Changes returns the channel on which changes are delivered. It holds at
// most one pending Change: if the receiver falls behind, an undelivered
// Change is replaced by the newer one, so the receiver always sees the latest
// state. The channel is never closed.
func (w *Watcher) Changes() <-chan Change { return w.changes }

// Run watches until ctx is done, then returns nil once its resources are
// released. It returns an error only if the watch cannot be set up at all.
// The file is also checked once, a debounce period after the watch is in
// place, so a change made between the caller's Load and Run is not missed.
//
// If the config directory does not exist (no config yet), Run watches its
// nearest existing ancestor and moves down as the directories are created,
// so "mkdir -p ~/.config/mcpd" followed by writing config.json is seen. If
// the directory is removed, Run moves up again.
func (w *Watcher) Run(ctx context.Context) error {
	debounce := w.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch config %q: %w", w.path, err)
	}
	defer fw.Close()
	dir, base := filepath.Dir(w.path), filepath.Base(w.path)
	d := &dirWatch{fw: fw, target: dir}
	if err := d.update(); err != nil {
		return err
	}

	timer := time.NewTimer(debounce) // the initial check
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			switch {
			case d.watched == dir && filepath.Base(ev.Name) == base && filepath.Dir(ev.Name) == dir:
				// Every kind of event counts (create, write, rename,
				// remove, chmod): the content comparison filters no-ops.
				timer.Reset(debounce)
			case d.affects(ev.Name):
				// A directory on the way to the config appeared or the
				// config directory went away: move the watch, then re-read
				// (the file may have been written before the new watch).
				if err := d.update(); err != nil {
					w.emit(Change{Err: err})
				}
				timer.Reset(debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			// Events may have been lost (e.g. fsnotify.ErrEventOverflow):
			// re-read the file, and tell the receiver about the error.
			w.emit(Change{Err: fmt.Errorf("watch config %q: %w", w.path, err)})
			timer.Reset(debounce)
		case <-timer.C:
			w.check(ctx)
		}
	}
}

// dirWatch keeps an fsnotify watch on the config directory, or on its
// nearest existing ancestor while the directory does not exist.
type dirWatch struct {
	fw      *fsnotify.Watcher
	target  string // the config directory
	watched string // the directory watched now
}

// update watches target, or its nearest existing ancestor.
func (d *dirWatch) update() error {
	dir := d.target
	for {
		err := d.fw.Add(dir)
		if err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return fmt.Errorf("watch config directory %q: %w", dir, err)
		}
		dir = parent
	}
	if d.watched != "" && d.watched != dir {
		_ = d.fw.Remove(d.watched) // may already be gone with its directory
	}
	d.watched = dir
	return nil
}

// affects reports whether an event on name may change which directory must
// be watched: the watched directory itself (removed or renamed), or, while
// an ancestor is watched, its child on the way to the config directory.
func (d *dirWatch) affects(name string) bool {
	if name == d.watched {
		return true
	}
	if d.watched == d.target {
		return false
	}
	rel, err := filepath.Rel(d.watched, d.target)
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return name == filepath.Join(d.watched, first)
}

// check reads the file and emits a Change if its state differs from the last
// one seen. A read abandoned because ctx is done emits nothing.
func (w *Watcher) check(ctx context.Context) {
	data, err := ReadFile(ctx, w.path)
	switch {
	case ctx.Err() != nil:
		return
	case errors.Is(err, fs.ErrNotExist):
		if w.state == stateAbsent {
			return
		}
		w.state, w.last = stateAbsent, nil
		w.emit(Change{Err: err})
	case err != nil:
		w.state, w.last = stateUnknown, nil
		w.emit(Change{Err: err})
	default:
		if w.state == statePresent && bytes.Equal(data, w.last) {
			return
		}
		w.state, w.last = statePresent, data
		cfg, err := Parse(w.path, data)
		w.emit(Change{Config: cfg, Err: err})
	}
}

// emit delivers c without blocking, replacing an undelivered older Change.
// Only the Run goroutine sends, so after one drain the send succeeds.
func (w *Watcher) emit(c Change) {
	w.emitted.Add(1)
	for {
		select {
		case w.changes <- c:
			return
		default:
		}
		select {
		case <-w.changes:
		default:
		}
	}
}
