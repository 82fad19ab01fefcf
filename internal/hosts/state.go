package hosts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A Record is what connect did to one host file, round by round, kept
// under mcpd's state directory so that disconnect can undo it.
type Record struct {
	Host   string  `json:"host"`
	Path   string  `json:"path"`
	Rounds []Round `json:"rounds"`
}

// A Round is one connect that changed the file.
type Round struct {
	Time time.Time `json:"time"`
	// Backup is the file as it was before, saved whole.
	Backup string `json:"backup"`
	// Before and After are the sha256 of the file before and after.
	Before  string   `json:"before"`
	After   string   `json:"after"`
	Changes []Change `json:"changes"`
}

// Store keeps records and backups in a directory of mcpd's state.
type Store struct{ Dir string }

func (s Store) recordPath(file string) string {
	sum := sha256.Sum256([]byte(file))
	return filepath.Join(s.Dir, "records", hex.EncodeToString(sum[:8])+".json")
}

// Record returns the record of file, nil when connect never changed it.
func (s Store) Record(file string) (*Record, error) {
	data, err := os.ReadFile(s.recordPath(file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("connect record of %s (%s): %w", file, s.recordPath(file), err)
	}
	return &r, nil
}

func (s Store) saveRecord(r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := s.recordPath(r.Path)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return WriteAtomic(p, append(data, '\n'), 0o600, nil)
}

func (s Store) dropRecord(file string) error {
	err := os.Remove(s.recordPath(file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Backup saves data, the content of file (of host, or "mcpd" for mcpd's
// own config), and returns the backup's path.
func (s Store) Backup(host, file string, data []byte) (string, error) {
	return s.backup(host, file, data, time.Now())
}

// backup saves data, the content of host's file, and returns its path.
func (s Store) backup(host, file string, data []byte, now time.Time) (string, error) {
	dir := filepath.Join(s.Dir, "backups", host)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	base := now.UTC().Format("20060102T150405.000000000Z") + "-" + strings.TrimPrefix(filepath.Base(file), ".")
	p := filepath.Join(dir, base)
	if err := WriteAtomic(p, data, 0o600, nil); err != nil {
		return "", fmt.Errorf("back up %s: %w", file, err)
	}
	return p, nil
}

// Commit writes after over o's file, once its original is backed up and
// recorded with changes. The file must still be as o read it.
func (s Store) Commit(o *Opened, after []byte, changes []Change, now time.Time) (*Round, error) {
	cur, err := os.ReadFile(o.File.Path)
	if err != nil {
		return nil, err
	}
	if string(cur) != string(o.Data) {
		return nil, fmt.Errorf("%s changed while connect read it; run connect again", o.File.Path)
	}
	rec, err := s.Record(o.File.Path)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &Record{Host: o.Host.ID, Path: o.File.Path}
	}
	fi, err := os.Stat(o.File.Path)
	if err != nil {
		return nil, err
	}
	if err := Writable(o.File.Path); err != nil {
		return nil, err
	}
	b, err := s.backup(o.Host.ID, o.File.Path, o.Data, now)
	if err != nil {
		return nil, err
	}
	round := Round{Time: now.UTC(), Backup: b, Before: digest(o.Data), After: digest(after), Changes: changes}
	rec.Rounds = append(rec.Rounds, round)
	if err := s.saveRecord(rec); err != nil {
		return nil, err
	}
	if err := WriteAtomic(o.File.Path, after, fi.Mode().Perm(), fi); err != nil {
		rec.Rounds = rec.Rounds[:len(rec.Rounds)-1]
		if len(rec.Rounds) == 0 {
			_ = s.dropRecord(o.File.Path)
		} else {
			_ = s.saveRecord(rec)
		}
		return nil, err
	}
	return &round, nil
}

// Writable reports why path cannot be replaced, nil when it can: the file
// must be writable, and so must its directory, where the new file is made.
// A file without its owner's write bit is read-only even to root: someone
// made it so (a file managed by another tool), and connect respects that.
func Writable(path string) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%s is read-only (mode %04o); make it writable (chmod u+w) to connect or disconnect it", path, fi.Mode().Perm())
	}
	if err := unix.Access(path, unix.W_OK); err != nil {
		return fmt.Errorf("%s is not writable: %w", path, err)
	}
	if err := unix.Access(filepath.Dir(path), unix.W_OK); err != nil {
		return fmt.Errorf("%s: its directory is not writable: %w", path, err)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// WriteAtomic replaces path with data: a temporary file in the same
// directory, synced, given mode (and owner's of like, if set), renamed
// over path (the file a link points to), and the directory synced. A reader sees the old or the new
// file, never a part.
func WriteAtomic(path string, data []byte, mode fs.FileMode, like fs.FileInfo) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // a dotfile linked from elsewhere stays a link
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if st, ok := statOwner(like); ok && (st.Uid != uint32(os.Getuid()) || st.Gid != uint32(os.Getgid())) {
		if err = f.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("keep the owner of %s: %w", path, err)
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func statOwner(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}
