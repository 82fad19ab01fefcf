package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/paths"
)

// Errors of Store's methods; the returned errors wrap them and name the
// secret.
var (
	// ErrNotFound: no secret of that name in the backend in use.
	ErrNotFound = errors.New("secrets: not found")
	// ErrLocked: the secret is in a locked keyring (or the keyring to
	// store it in is locked) and the store may not prompt to unlock it.
	ErrLocked = errors.New("secrets: keyring locked")
	// ErrInvalidName: a name that is not [A-Za-z0-9_.-]+.
	ErrInvalidName = errors.New("secrets: invalid name")
)

// Service is the value of the "service" attribute of mcpd's items.
const Service = "mcpd"

// FileName is the fallback file's name in the state directory.
const FileName = "secrets.json"

// Options configure Open.
type Options struct {
	// Interactive lets the store ask the Secret Service to unlock a locked
	// keyring, which shows the desktop's password prompt and waits for it
	// (mcpdctl). False (mcpd): a locked keyring is ErrLocked at once.
	Interactive bool
	// File is the fallback file. If empty, FileName in paths.StateDir().
	File string
	// BusAddress is the D-Bus session bus address. If empty,
	// $DBUS_SESSION_BUS_ADDRESS, else the systemd default
	// unix:path=$XDG_RUNTIME_DIR/bus when that socket exists.
	BusAddress string
	// Timeout bounds each D-Bus call; a prompt has its own, PromptTimeout.
	// If zero, 5s.
	Timeout time.Duration
}

// PromptTimeout bounds how long an interactive unlock waits for the user.
const PromptTimeout = 2 * time.Minute

// backend is one place secrets are kept.
type backend interface {
	get(ctx context.Context, name string) (string, error)
	set(ctx context.Context, name, value string) error
	del(ctx context.Context, name string) error
	list(ctx context.Context) ([]string, error)
	describe() string
	close()
}

// Store gets and sets mcpd's secrets in the backend in use: the Secret
// Service when the session bus has one, else the file. Its methods may be
// called concurrently; the backend is chosen at the first call of each
// method while none is connected (so a keyring that appears after mcpd
// started is used from then on). Close is idempotent.
type Store struct {
	opts Options

	mu      sync.Mutex // guards following
	svc     *service   // nil when not connected
	why     string     // why the Secret Service is not used; "" when it is
	file    *fileStore
	checked time.Time
}

// Open returns a store; it connects nothing until used.
func Open(opts Options) *Store {
	if opts.File == "" {
		opts.File = filepath.Join(paths.StateDir(), FileName)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	return &Store{opts: opts, file: &fileStore{path: opts.File}}
}

// recheck is how often a store on the file fallback looks for a Secret
// Service again.
const recheck = 10 * time.Second

// pick returns the backend to use.
func (s *Store) pick() backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil && !s.svc.closed() {
		return s.svc
	}
	if s.svc != nil {
		s.svc.close()
		s.svc = nil
	}
	if s.why == "" || time.Since(s.checked) >= recheck {
		s.checked = time.Now()
		svc, err := connect(s.opts)
		if err == nil {
			s.svc, s.why = svc, ""
			return svc
		}
		s.why = err.Error()
	}
	return s.file
}

// Backend describes the backend in use, for status: "Secret Service
// (gnome-keyring)" or "file /path (no Secret Service: why)".
func (s *Store) Backend() string {
	b := s.pick()
	if b == backend(s.file) {
		s.mu.Lock()
		why := s.why
		s.mu.Unlock()
		return fmt.Sprintf("%s (%s)", b.describe(), why)
	}
	return b.describe()
}

// UsesKeyring reports whether the store uses the Secret Service.
func (s *Store) UsesKeyring() bool { return s.pick() != backend(s.file) }

// Get returns the value of the secret name. A missing one is ErrNotFound;
// one in a locked keyring is ErrLocked unless the store is interactive and
// the user unlocks it.
func (s *Store) Get(ctx context.Context, name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	b := s.pick()
	v, err := b.get(ctx, name)
	if err != nil {
		return "", s.wrap(b, name, err)
	}
	return v, nil
}

// Set stores value as the secret name, replacing any.
func (s *Store) Set(ctx context.Context, name, value string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	b := s.pick()
	return s.wrap(b, name, b.set(ctx, name, value))
}

// Delete removes the secret name; a missing one is ErrNotFound.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	b := s.pick()
	return s.wrap(b, name, b.del(ctx, name))
}

// List returns the names of the stored secrets, sorted.
func (s *Store) List(ctx context.Context) ([]string, error) {
	b := s.pick()
	names, err := b.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list secrets in %s: %w", b.describe(), err)
	}
	return names, nil
}

// Close releases the D-Bus connection, if any.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		s.svc.close()
		s.svc = nil
	}
}

// wrap names the secret and what to do in err.
func (s *Store) wrap(b backend, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return &nameError{fmt.Sprintf("secret %s not found (mcpdctl secret set %s)", name, name), ErrNotFound}
	case errors.Is(err, ErrLocked):
		return &nameError{fmt.Sprintf("secret %s: the keyring is locked (unlock your keyring)", name), ErrLocked}
	}
	return fmt.Errorf("secret %s in %s: %w", name, b.describe(), err)
}

// nameError is an error about one secret that Is its sentinel without
// repeating the sentinel's text.
type nameError struct {
	msg      string
	sentinel error
}

func (e *nameError) Error() string        { return e.msg }
func (e *nameError) Is(target error) bool { return target == e.sentinel }

// CheckName reports whether name can name a secret: letters, digits, "_",
// "." and "-", at most 128 bytes.
func CheckName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("%w %q: want 1 to 128 of A-Z a-z 0-9 _ . -", ErrInvalidName, name)
	}
	for _, r := range name {
		switch {
		case r == '_', r == '.', r == '-', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			return fmt.Errorf("%w %q: want 1 to 128 of A-Z a-z 0-9 _ . -", ErrInvalidName, name)
		}
	}
	return nil
}

// busAddress is the session bus address for opts, or "" for none.
func busAddress(opts Options) string {
	if opts.BusAddress != "" {
		return opts.BusAddress
	}
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if rd := os.Getenv("XDG_RUNTIME_DIR"); rd != "" {
		p := filepath.Join(rd, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			return "unix:path=" + p
		}
	}
	return ""
}
