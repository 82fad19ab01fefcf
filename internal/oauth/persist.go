package oauth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Persister keeps the credentials (client registrations, tokens, which
// server uses which) as one document, read whole once and rewritten whole
// after each change: oauth.json's content.
type Persister interface {
	// Load returns the stored document, nil when none is stored. An error
	// wrapping ErrUnavailable means it cannot be read for now (a locked
	// keyring): the Manager saves nothing until a later Load succeeds, so
	// that what is stored is never replaced by what it could not read.
	// Another error is logged and the Manager starts empty.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the stored document.
	Save(ctx context.Context, doc []byte) error
	// Where says where the document is kept, for mcpdctl status: "file
	// PATH", or "Secret Service (PROGRAM) item service=mcpd kind=oauth".
	Where() string
}

// ErrUnavailable: the stored credentials cannot be read for now.
var ErrUnavailable = errors.New("oauth: stored credentials unavailable")

// FileStore keeps the credentials in the 0600 file at path, in a 0700
// directory, written atomically.
func FileStore(path string) Persister { return fileStore{path: path} }

type fileStore struct{ path string }

func (f fileStore) Where() string { return "file " + f.path }

// Path is the file.
func (f fileStore) Path() string { return f.path }

// Load reads the file; a missing one is nil. A file others may read is
// tightened to 0600 first.
func (f fileStore) Load(context.Context) ([]byte, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: credentials file: %w", err)
	}
	if fi.Mode().Perm() != 0o600 {
		if err := os.Chmod(f.path, 0o600); err != nil {
			return nil, fmt.Errorf("oauth: credentials file: %w", err)
		}
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("oauth: credentials file: %w", err)
	}
	return b, nil
}

func (f fileStore) Save(_ context.Context, doc []byte) error { return writeStore(f.path, doc) }
