package oauth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/secrets"
)

// ItemKind is the kind of the Secret Service item that holds the
// credentials: attributes service=mcpd kind=oauth, no name, so that
// mcpdctl secret ls skips it (secrets.Store.SetItem).
const ItemKind = "oauth"

// itemLabel is the item's label, as the keyring's UI shows it.
const itemLabel = "mcpd OAuth tokens"

// KeyringStore keeps the credentials as one item of the Secret Service
// (ItemKind) when st has one at the first successful Load, else in the
// 0600 file at path, for the life of the process. The first Load that
// finds a Secret Service without the item and a file at path moves the
// file into the keyring: it stores the file's content, reads it back, and
// removes the file. A locked keyring (st must not prompt) is
// ErrUnavailable: the Manager tries again later and saves nothing
// meanwhile.
func KeyringStore(st *secrets.Store, path string, log *zap.Logger) Persister {
	if log == nil {
		log = zap.NewNop()
	}
	return &keyringStore{st: st, file: fileStore{path: path}, log: log}
}

type keyringStore struct {
	st   *secrets.Store
	file fileStore
	log  *zap.Logger

	mu      sync.Mutex // guards decided, useFile and why
	decided bool       // a Load chose the backend
	useFile bool
	why     string // why the file, when useFile
}

// Path is the file, when the credentials are kept in it.
func (k *keyringStore) Path() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.decided && !k.useFile {
		return ""
	}
	return k.file.path
}

func (k *keyringStore) Where() string {
	k.mu.Lock()
	decided, useFile, why := k.decided, k.useFile, k.why
	k.mu.Unlock()
	if decided && useFile {
		return fmt.Sprintf("%s (%s)", k.file.Where(), why)
	}
	b := k.st.Backend()
	if !k.st.UsesKeyring() {
		// b is "file secrets.json (why)": say the oauth file, and why.
		return fmt.Sprintf("%s (%s)", k.file.Where(), whyNoKeyring(b))
	}
	return b + " item service=mcpd kind=" + ItemKind
}

// whyNoKeyring is the reason in the secrets store's "file PATH (WHY)".
func whyNoKeyring(backend string) string {
	for i := 0; i < len(backend); i++ {
		if backend[i] == '(' && backend[len(backend)-1] == ')' {
			return backend[i+1 : len(backend)-1]
		}
	}
	return "no Secret Service"
}

func (k *keyringStore) decide(useFile bool, why string) {
	k.mu.Lock()
	k.decided, k.useFile, k.why = true, useFile, why
	k.mu.Unlock()
}

func (k *keyringStore) Load(ctx context.Context) ([]byte, error) {
	if !k.st.UsesKeyring() {
		k.decide(true, whyNoKeyring(k.st.Backend()))
		return k.file.Load(ctx)
	}
	v, err := k.st.GetItem(ctx, ItemKind)
	switch {
	case err == nil:
		k.decide(false, "")
		if _, serr := os.Stat(k.file.path); serr == nil {
			k.log.Warn("oauth credentials are in the keyring; the file beside them is not read (remove it)", zap.String("file", k.file.path))
		}
		return []byte(v), nil
	case errors.Is(err, secrets.ErrNotFound):
		return k.migrate(ctx)
	}
	// Locked, the Secret Service failed, or it went away since
	// UsesKeyring: try again later rather than read a file that may be
	// stale.
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// migrate moves the file, if any, into the keyring, with nothing stored
// there yet.
func (k *keyringStore) migrate(ctx context.Context) ([]byte, error) {
	b, err := k.file.Load(ctx)
	if err != nil {
		k.decide(false, "")
		return nil, err
	}
	if b == nil {
		k.decide(false, "")
		return nil, nil
	}
	if _, err := decodeStore(b, k.file.Where()); err != nil {
		// Not moved: left for the user to mend; the keyring starts empty.
		k.decide(false, "")
		return nil, fmt.Errorf("%w; it is not moved into the keyring", err)
	}
	if err := k.st.SetItem(ctx, ItemKind, itemLabel, string(b)); err != nil {
		if errors.Is(err, secrets.ErrLocked) {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		k.log.Warn("oauth credentials not moved into the keyring; kept in the file", zap.String("file", k.file.path), zap.Error(err))
		k.decide(true, "not moved into the keyring: "+err.Error())
		return b, nil
	}
	if got, err := k.st.GetItem(ctx, ItemKind); err != nil || got != string(b) {
		k.log.Warn("oauth credentials moved into the keyring did not read back; the file is kept", zap.String("file", k.file.path), zap.Error(err))
		k.decide(false, "")
		return b, nil
	}
	if err := os.Remove(k.file.path); err != nil {
		k.log.Warn("oauth credentials moved into the keyring; the file could not be removed", zap.String("file", k.file.path), zap.Error(err))
	} else {
		k.log.Info("oauth credentials moved into the keyring; file removed", zap.String("file", k.file.path))
	}
	k.decide(false, "")
	return b, nil
}

func (k *keyringStore) Save(ctx context.Context, doc []byte) error {
	k.mu.Lock()
	decided, useFile := k.decided, k.useFile
	k.mu.Unlock()
	if !decided {
		return errors.New("oauth: credentials not loaded")
	}
	if useFile {
		return k.file.Save(ctx, doc)
	}
	if err := k.st.SetItem(ctx, ItemKind, itemLabel, string(doc)); err != nil {
		return fmt.Errorf("oauth: save credentials: %w", err)
	}
	return nil
}
