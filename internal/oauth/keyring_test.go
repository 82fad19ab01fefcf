package oauth

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
)

// keyringEnv is a Manager on a KeyringStore over the bus addr, with its
// oauth.json in dir, and the secrets store it uses.
type keyringEnv struct {
	*testEnv
	st *secrets.Store
}

func newKeyringManager(t *testing.T, addr, dir string) *keyringEnv {
	t.Helper()
	st := secrets.Open(secrets.Options{BusAddress: addr, File: filepath.Join(dir, secrets.FileName)})
	t.Cleanup(st.Close)
	logs := &logBuffer{}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(logs), zap.DebugLevel))
	m := NewManagerWith(KeyringStore(st, filepath.Join(dir, FileName), log), log, &http.Client{Timeout: 10 * time.Second})
	c := &clock{t: time.Now()}
	m.now = c.now
	return &keyringEnv{testEnv: &testEnv{m: m, logs: logs, clock: c, dir: dir}, st: st}
}

// item is the keyring's oauth item, decoded.
func (e *keyringEnv) item(t *testing.T) *storeData {
	t.Helper()
	v, err := e.st.GetItem(context.Background(), ItemKind)
	if err != nil {
		t.Fatalf("oauth item: %v", err)
	}
	d, err := decodeStore([]byte(v), "item")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestKeyringTokensRoundTrip: a login's token is saved as the keyring's
// oauth item (no file), which secret ls does not list, and a restarted
// Manager reads it back and calls without a login.
func TestKeyringTokensRoundTrip(t *testing.T) {
	k := keyring.Start(t)
	f := oauthtest.New(t, nil)
	dir := t.TempDir()
	e := newKeyringManager(t, k.Addr, dir)
	if w := e.m.StoreStatus(); !strings.HasPrefix(w, "Secret Service (gnome-keyring") || !strings.HasSuffix(w, "item service=mcpd kind=oauth") {
		t.Errorf("StoreStatus = %q", w)
	}
	e.login(t, f, "remote", Config{})
	if _, err := os.Stat(filepath.Join(dir, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("oauth.json written beside a keyring: %v", err)
	}
	d := e.item(t)
	if d.Servers["remote"] == nil || len(d.Tokens) != 1 || d.Tokens[0].AccessToken == "" {
		t.Fatalf("item: servers %v, %d tokens", d.Servers, len(d.Tokens))
	}
	if names, err := e.st.List(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("secret ls lists %v, %v; want the item left out", names, err)
	}
	checkNoSecrets(t, f, e.logs.String())

	e2 := newKeyringManager(t, k.Addr, dir)
	a := e2.m.For("remote", f.MCPURL(), Config{})
	if code, err := call(context.Background(), a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after a restart: %d %v", code, err)
	}
	if n := f.Registrations.Load(); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
}

// TestKeyringStoreFileWithoutBus: without a session bus the tokens go to
// the 0600 oauth.json, and StoreStatus names it and says why.
func TestKeyringStoreFileWithoutBus(t *testing.T) {
	f := oauthtest.New(t, nil)
	dir := filepath.Join(t.TempDir(), "state")
	e := newKeyringManager(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), dir)
	path := filepath.Join(dir, FileName)
	if w := e.m.StoreStatus(); !strings.HasPrefix(w, "file "+path+" (no session bus") {
		t.Errorf("StoreStatus = %q", w)
	}
	e.login(t, f, "remote", Config{})
	d, err := loadStore(path)
	if err != nil || d.Servers["remote"] == nil {
		t.Fatalf("oauth.json: %v, %v", d, err)
	}
	checkFileModes(t, dir)
	if p := e.m.Path(); p != path {
		t.Errorf("Path = %q", p)
	}
}

// TestKeyringMigratesFile: an oauth.json from before is moved into the
// keyring at the first load, then removed; its tokens work on.
func TestKeyringMigratesFile(t *testing.T) {
	k := keyring.Start(t)
	f := oauthtest.New(t, nil)
	dir := t.TempDir()
	old := newTestManager(t, dir) // the file store, as before
	old.login(t, f, "remote", Config{})
	path := filepath.Join(dir, FileName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newKeyringManager(t, k.Addr, dir)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("oauth.json left after the move: %v", err)
	}
	if v, err := e.st.GetItem(context.Background(), ItemKind); err != nil || v != string(before) {
		t.Fatalf("item after the move: %v; want the file's content", err)
	}
	if !strings.Contains(e.logs.String(), "moved into the keyring") {
		t.Errorf("the move was not logged:\n%s", e.logs.String())
	}
	a := e.m.For("remote", f.MCPURL(), Config{})
	if code, err := call(context.Background(), a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after the move: %d %v", code, err)
	}
}

// TestKeyringLockedAtStartKeepsTokens: a Manager that starts with the
// keyring locked does not read the tokens, says so, saves nothing while
// it cannot read them (a login meanwhile stays in memory), and once the
// keyring is unlocked reads them, merges its login and saves both.
func TestKeyringLockedAtStartKeepsTokens(t *testing.T) {
	k := keyring.Start(t)
	f := oauthtest.New(t, nil)
	dir := t.TempDir()
	ctx := context.Background()
	e := newKeyringManager(t, k.Addr, dir)
	e.login(t, f, "remote", Config{})
	stored := e.item(t)
	if err := e.st.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	e2 := newKeyringManager(t, k.Addr, dir)
	if w := e2.m.StoreStatus(); !strings.Contains(w, "not loaded") || !strings.Contains(w, "unlock your keyring") {
		t.Errorf("StoreStatus with the keyring locked = %q", w)
	}
	a := e2.m.For("remote", f.MCPURL(), Config{})
	_, err := a.Token(ctx)
	if err == nil || errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "unlock your keyring") {
		t.Errorf("Token with the keyring locked: %v; want the reason, not a login", err)
	}
	// A login meanwhile works from memory and is not saved.
	e2.login(t, f, "other", Config{})
	if !strings.Contains(e2.logs.String(), "oauth credentials not saved") {
		t.Errorf("the refused save was not logged:\n%s", e2.logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("oauth.json written with the keyring locked: %v", err)
	}

	if err := k.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if d := e.item(t); d.Servers["remote"] == nil || d.Servers["other"] != nil || len(d.Tokens) != len(stored.Tokens) ||
		d.Tokens[0].AccessToken != stored.Tokens[0].AccessToken {
		t.Fatalf("item after the locked start: servers %v; want what was stored", d.Servers)
	}
	e2.clock.advance(loadRetry + time.Second)
	if st := e2.m.Status("remote"); !st.LoggedIn {
		t.Fatalf("Status after the unlock = %+v, want the stored token", st)
	}
	if w := e2.m.StoreStatus(); strings.Contains(w, "not loaded") {
		t.Errorf("StoreStatus after the unlock = %q", w)
	}
	if d := e.item(t); d.Servers["remote"] == nil || d.Servers["other"] == nil {
		t.Fatalf("item after the load: servers %v; want remote (stored) and other (merged)", d.Servers)
	}
	if code, err := call(ctx, a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after the unlock: %d %v", code, err)
	}
}

// TestKeyringMigrationWaitsForUnlock: an oauth.json found while the
// keyring is locked is left as it is, and moved once the keyring is
// unlocked.
func TestKeyringMigrationWaitsForUnlock(t *testing.T) {
	k := keyring.Start(t)
	f := oauthtest.New(t, nil)
	dir := t.TempDir()
	ctx := context.Background()
	old := newTestManager(t, dir)
	old.login(t, f, "remote", Config{})
	path := filepath.Join(dir, FileName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	locker := secrets.Open(secrets.Options{BusAddress: k.Addr, File: filepath.Join(t.TempDir(), "unused")})
	defer locker.Close()
	if err := locker.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	e := newKeyringManager(t, k.Addr, dir)
	if w := e.m.StoreStatus(); !strings.Contains(w, "not loaded") {
		t.Errorf("StoreStatus = %q, want not loaded", w)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Fatalf("oauth.json changed with the keyring locked: %v", err)
	}
	if err := k.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(loadRetry + time.Second)
	if st := e.m.Status("remote"); !st.LoggedIn {
		t.Fatalf("Status after the unlock = %+v", st)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("oauth.json left after the move: %v", err)
	}
	if v, err := e.st.GetItem(ctx, ItemKind); err != nil || v != string(before) {
		t.Errorf("item after the move: %v", err)
	}
}
