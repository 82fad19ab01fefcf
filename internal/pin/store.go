package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// storeVersion is the format of a pins file.
const storeVersion = 1

// Store keeps one pins file per server under a directory (mcpd's state
// directory's "pins"): <dir>/<server>.json, written whole and atomically
// (a temporary file renamed over the old one), mode 0600. A file holds the
// tools of the shared variant ("tools": a legacy server's, seen alike by
// every client) and those of each declaration variant of a server that
// shapes its list by the client's declared capabilities ("variants", by
// the declaration's digest).
type Store struct {
	dir string

	mu    sync.Mutex             // guards files
	files map[string]*sync.Mutex // per server: serialises its file's reads and read-modify-writes
}

// lock takes server's file lock and returns its unlock.
func (s *Store) lock(server string) func() {
	s.mu.Lock()
	if s.files == nil {
		s.files = map[string]*sync.Mutex{}
	}
	l := s.files[server]
	if l == nil {
		l = new(sync.Mutex)
		s.files[server] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// NewStore returns the store in dir, which is created on first save.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// file is the content of one pins file.
type file struct {
	Version int       `json:"version"`
	Server  string    `json:"server"`
	Updated time.Time `json:"updated"`
	Tools   Tools     `json:"tools"`
	// Variants are the declaration variants' pins, by Variant.Key.
	Variants map[string]variantFile `json:"variants,omitempty"`
}

// variantFile is one declaration variant's pins.
type variantFile struct {
	// Capabilities is the declaration the variant was first seen with.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	Tools        Tools           `json:"tools"`
}

// Load returns the pinned tools of server's shared variant; ok is false
// when nothing was pinned yet (no file).
func (s *Store) Load(server string) (tools Tools, ok bool, err error) {
	defer s.lock(server)()
	f, ok, err := s.read(server)
	if !ok || err != nil {
		return nil, false, err
	}
	return f.Tools, true, nil
}

// LoadVariant returns the pinned tools of one variant of server (v.Key ""
// is the shared variant, as Load); ok is false when that variant has none.
// A file written before variants (only the shared tools) gives them to the
// first declaration variant asked for, which keeps them from then on: a
// server whose list did not change keeps its approval, the variants seen
// later are pinned on their first use.
func (s *Store) LoadVariant(server string, v Variant) (tools Tools, ok bool, err error) {
	if v.Key == "" {
		return s.Load(server)
	}
	defer s.lock(server)()
	f, ok, err := s.read(server)
	if !ok || err != nil {
		return nil, false, err
	}
	if vf, ok := f.Variants[v.Key]; ok {
		if vf.Tools == nil {
			vf.Tools = Tools{}
		}
		return vf.Tools, true, nil
	}
	if len(f.Variants) > 0 || len(f.Tools) == 0 {
		return nil, false, nil
	}
	f.Variants = map[string]variantFile{v.Key: {Capabilities: v.Capabilities, Tools: f.Tools}}
	if err := s.write(server, f); err != nil {
		return nil, false, err
	}
	return f.Tools, true, nil
}

// read reads server's file; ok is false when there is none. server's lock is held.
func (s *Store) read(server string) (f file, ok bool, err error) {
	data, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return file{}, false, nil
	}
	if err != nil {
		return file{}, false, fmt.Errorf("read pins of %q: %w", server, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return file{}, false, fmt.Errorf("read pins of %q: %s: %w", server, s.path(server), err)
	}
	if f.Version != storeVersion {
		return file{}, false, fmt.Errorf("read pins of %q: %s: unknown version %d", server, s.path(server), f.Version)
	}
	if f.Tools == nil {
		f.Tools = Tools{}
	}
	return f, true, nil
}

// Save replaces the pinned tools of server's shared variant.
func (s *Store) Save(server string, tools Tools) error {
	return s.SaveVariant(server, Variant{}, tools)
}

// SaveVariant replaces the pinned tools of one variant of server, keeping
// the others.
func (s *Store) SaveVariant(server string, v Variant, tools Tools) error {
	if tools == nil {
		tools = Tools{}
	}
	defer s.lock(server)()
	f, _, err := s.read(server)
	if err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if v.Key == "" {
		f.Tools = tools
	} else {
		if f.Variants == nil {
			f.Variants = map[string]variantFile{}
		}
		caps := f.Variants[v.Key].Capabilities
		if caps == nil {
			caps = v.Capabilities
		}
		f.Variants[v.Key] = variantFile{Capabilities: caps, Tools: tools}
	}
	return s.write(server, f)
}

// TrimVariants drops from server's file the declaration variants not in
// keep, in key order, while it holds more than max of them counting added,
// a variant about to be saved (a bound: bound.go); a file within the bound
// is left as it is.
func (s *Store) TrimVariants(server string, max int, keep map[string]bool, added string) error {
	defer s.lock(server)()
	f, ok, err := s.read(server)
	if !ok || err != nil {
		return err
	}
	count := func() int {
		if _, in := f.Variants[added]; in || added == "" {
			return len(f.Variants)
		}
		return len(f.Variants) + 1
	}
	if count() <= max {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(f.Variants)) {
		if count() <= max {
			break
		}
		if !keep[k] {
			delete(f.Variants, k)
		}
	}
	return s.write(server, f)
}

// write writes f as server's file. server's lock is held.
func (s *Store) write(server string, f file) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if f.Tools == nil {
		f.Tools = Tools{}
	}
	f.Version, f.Server, f.Updated = storeVersion, server, time.Now().UTC()
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	tmp, err := os.CreateTemp(s.dir, "."+server+".*.tmp")
	if err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if err := os.Rename(tmp.Name(), s.path(server)); err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	return nil
}

// path is the pins file of server. Server names are [A-Za-z0-9_.-] (the
// config checks), so they are safe file names, but "." and ".." are not.
func (s *Store) path(server string) string {
	if server == "." || server == ".." {
		server = "_" + server
	}
	return filepath.Join(s.dir, server+".json")
}
