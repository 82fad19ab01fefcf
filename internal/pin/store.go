package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// storeVersion is the format of a pins file.
const storeVersion = 1

// Store keeps one pins file per server under a directory (mcpd's state
// directory's "pins"): <dir>/<server>.json, written whole and atomically
// (a temporary file renamed over the old one), mode 0600.
type Store struct {
	dir string
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
}

// Load returns the pinned tools of server; ok is false when nothing was
// pinned yet (no file).
func (s *Store) Load(server string) (tools Tools, ok bool, err error) {
	data, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read pins of %q: %w", server, err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, false, fmt.Errorf("read pins of %q: %s: %w", server, s.path(server), err)
	}
	if f.Version != storeVersion {
		return nil, false, fmt.Errorf("read pins of %q: %s: unknown version %d", server, s.path(server), f.Version)
	}
	if f.Tools == nil {
		f.Tools = Tools{}
	}
	return f.Tools, true, nil
}

// Save replaces the pinned tools of server.
func (s *Store) Save(server string, tools Tools) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("save pins of %q: %w", server, err)
	}
	if tools == nil {
		tools = Tools{}
	}
	data, err := json.MarshalIndent(file{Version: storeVersion, Server: server, Updated: time.Now().UTC(), Tools: tools}, "", "  ")
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
