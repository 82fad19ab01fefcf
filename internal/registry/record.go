package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Record says where a configured server came from. mcpd's config accepts
// no unknown keys, so the origin is kept beside it rather than in the
// entry.
type Record struct {
	// Name and Version are the registry's server name and version.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Registry is the registry's URL.
	Registry string `json:"registry"`
	// Config is the config file the entry was written to.
	Config string `json:"config"`
	// Added is when the entry was written.
	Added time.Time `json:"added"`
}

// Records maps a local server name to its Record.
type Records map[string]Record

// RecordsPath is the record file under mcpd's state directory.
func RecordsPath(stateDir string) string { return filepath.Join(stateDir, "registry", "servers.json") }

// LoadRecords reads the record file at path; a missing file is no records.
func LoadRecords(path string) (Records, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Records{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry records: %w", err)
	}
	var f struct {
		Servers Records `json:"servers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("registry records %s: %w", path, err)
	}
	if f.Servers == nil {
		f.Servers = Records{}
	}
	return f.Servers, nil
}

// Save writes the records to path.
func (r Records) Save(path string) error {
	data, err := json.MarshalIndent(struct {
		Servers Records `json:"servers"`
	}{r}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("registry records: %w", err)
	}
	if err := writeFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("registry records: %w", err)
	}
	return nil
}

// Newer reports whether version a is newer than b: semantic versions
// compare by number (a release above its pre-releases), others are newer
// when they differ (the registry's latest is then taken at its word).
func Newer(a, b string) bool {
	if a == b {
		return false
	}
	pa, oka := parseSemver(a)
	pb, okb := parseSemver(b)
	if !oka || !okb {
		return true
	}
	for i := 0; i < 3; i++ {
		if pa.n[i] != pb.n[i] {
			return pa.n[i] > pb.n[i]
		}
	}
	switch {
	case pa.pre == pb.pre:
		return false
	case pa.pre == "":
		return true
	case pb.pre == "":
		return false
	}
	return pa.pre > pb.pre
}

type semver struct {
	n   [3]int
	pre string
}

func parseSemver(s string) (semver, bool) {
	var v semver
	if len(s) > 0 && s[0] == 'v' {
		s = s[1:]
	}
	if i := indexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	if i := indexByte(s, '-'); i >= 0 {
		v.pre, s = s[i+1:], s[:i]
	}
	part := 0
	digits := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			v.n[part] = v.n[part]*10 + int(c-'0')
			digits++
		case c == '.' && digits > 0 && part < 2:
			part++
			digits = 0
		default:
			return v, false
		}
	}
	return v, digits > 0 && part == 2
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
