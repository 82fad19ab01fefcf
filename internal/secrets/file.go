package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// fileStore is the fallback: a JSON object name → value in a 0600 file in
// a 0700 directory, rewritten whole (temporary file, then rename).
type fileStore struct {
	path string
	mu   sync.Mutex // serializes read-modify-write within the process
}

func (f *fileStore) describe() string { return "file " + f.path }

func (f *fileStore) close() {}

// read returns the file's secrets; a missing file has none. A file others
// can read is refused rather than used.
func (f *fileStore) read() (map[string]string, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %v, want 0600 (chmod 600 %s)", f.path, fi.Mode().Perm(), f.path)
	}
	m := map[string]string{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			// The decoder's message may quote the file's content: leave
			// it out.
			return nil, fmt.Errorf("%s is not a JSON object of strings", f.path)
		}
	}
	return m, nil
}

func (f *fileStore) write(m map[string]string) error {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".secrets-*.json") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.path)
}

func (f *fileStore) get(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

func (f *fileStore) set(_ context.Context, name, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	m[name] = value
	return f.write(m)
}

func (f *fileStore) del(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return ErrNotFound
	}
	delete(m, name)
	return f.write(m)
}

func (f *fileStore) list(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
}
