package secrets_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open returns a store on the keyring's bus (or on addr when k is nil),
// with its fallback file in a temporary directory.
func open(t *testing.T, addr string, interactive bool) (*secrets.Store, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "state", secrets.FileName)
	s := secrets.Open(secrets.Options{BusAddress: addr, File: file, Interactive: interactive})
	t.Cleanup(s.Close)
	return s, file
}

// TestKeyringRoundTrip: Set stores an item secret-tool finds by
// service=mcpd name=NAME, an item secret-tool stored is found by Get, List
// names both, Delete removes one.
func TestKeyringRoundTrip(t *testing.T) {
	k := keyring.Start(t)
	ctx := context.Background()
	s, file := open(t, k.Addr, false)
	if !s.UsesKeyring() {
		t.Fatalf("backend %q, want the Secret Service", s.Backend())
	}
	if b := s.Backend(); !strings.HasPrefix(b, "Secret Service (gnome-keyring") {
		t.Errorf("Backend() = %q", b)
	}
	const value = "gh-t0ken-value-71c3"
	if err := s.Set(ctx, "GITHUB_TOKEN", value); err != nil {
		t.Fatal(err)
	}
	if got, err := k.Lookup(ctx, "GITHUB_TOKEN"); err != nil || got != value {
		t.Fatalf("secret-tool lookup = %q, %v; want %q", got, err, value)
	}
	// Set again replaces, not duplicates.
	if err := s.Set(ctx, "GITHUB_TOKEN", value+"2"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "GITHUB_TOKEN"); err != nil || got != value+"2" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if err := k.Store(ctx, "OTHER", "from-outside"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "OTHER"); err != nil || got != "from-outside" {
		t.Fatalf("Get(OTHER) = %q, %v", got, err)
	}
	names, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GITHUB_TOKEN", "OTHER"}, names); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if err := s.Delete(ctx, "OTHER"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "OTHER")
	if !errors.Is(err, secrets.ErrNotFound) || err.Error() != "secret OTHER not found (mcpdctl secret set OTHER)" {
		t.Errorf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, "OTHER"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("Delete twice: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the fallback file was written with a keyring there: %v", err)
	}
}

// TestKeyringLocked: a locked keyring is ErrLocked with "unlock your
// keyring", at once and without the value, for a store that may not
// prompt.
func TestKeyringLocked(t *testing.T) {
	k := keyring.Start(t)
	ctx := context.Background()
	s, _ := open(t, k.Addr, false)
	const value = "locked-value-5d1e"
	if err := s.Set(ctx, "API_KEY", value); err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "API_KEY")
	if !errors.Is(err, secrets.ErrLocked) || got != "" {
		t.Fatalf("Get from a locked keyring = %q, %v", got, err)
	}
	if !strings.Contains(err.Error(), "unlock your keyring") || strings.Contains(err.Error(), value) {
		t.Errorf("error %q", err)
	}
	if err := s.Set(ctx, "NEW", "x"); !errors.Is(err, secrets.ErrLocked) {
		t.Errorf("Set into a locked keyring: %v", err)
	}
	if names, err := s.List(ctx); err != nil || !cmp.Equal(names, []string{"API_KEY"}) {
		t.Errorf("List of a locked keyring = %v, %v", names, err)
	}
}

// TestNoBusFallsBackToFile: with no session bus the secrets go to a 0600
// file, and the backend says so and why.
func TestNoBusFallsBackToFile(t *testing.T) {
	ctx := context.Background()
	s, file := open(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), false)
	if s.UsesKeyring() {
		t.Fatal("uses a keyring with no bus")
	}
	if b := s.Backend(); !strings.HasPrefix(b, "file "+file+" (no session bus") {
		t.Errorf("Backend() = %q", b)
	}
	if _, err := s.Get(ctx, "A"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("Get from no file: %v", err)
	}
	for _, n := range []string{"B", "A"} {
		if err := s.Set(ctx, n, "v-"+n); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(file)); di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
	if got, err := s.Get(ctx, "A"); err != nil || got != "v-A" {
		t.Errorf("Get = %q, %v", got, err)
	}
	if names, err := s.List(ctx); err != nil || !cmp.Equal(names, []string{"A", "B"}) {
		t.Errorf("List = %v, %v", names, err)
	}
	if err := s.Delete(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.List(ctx); !cmp.Equal(names, []string{"B"}) {
		t.Errorf("List after Delete = %v", names)
	}
	// A file others can read is refused, naming the fix, not the values.
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "B")
	if err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), "v-B") {
		t.Errorf("Get from a 0644 file: %v", err)
	}
}

// TestNoSecretServiceFallsBackToFile: a session bus without a Secret
// Service is the file too.
func TestNoSecretServiceFallsBackToFile(t *testing.T) {
	k := keyring.StartBus(t)
	s, _ := open(t, k.Addr, false)
	if b := s.Backend(); s.UsesKeyring() || !strings.Contains(b, "no Secret Service") {
		t.Errorf("Backend() = %q", b)
	}
}

func TestCheckName(t *testing.T) {
	for _, n := range []string{"A", "github.token-2_x"} {
		if err := secrets.CheckName(n); err != nil {
			t.Errorf("CheckName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", "a b", "a/b", "é", strings.Repeat("x", 129)} {
		if err := secrets.CheckName(n); !errors.Is(err, secrets.ErrInvalidName) {
			t.Errorf("CheckName(%q) = %v", n, err)
		}
	}
}

// TestKeyringItem: an item of a kind (service=mcpd kind=KIND, no name) is
// stored, read back, found by secret-tool, left out of List, and is
// ErrLocked in a locked keyring; without a Secret Service it is
// ErrNoKeyring, not the file.
func TestKeyringItem(t *testing.T) {
	k := keyring.Start(t)
	ctx := context.Background()
	s, file := open(t, k.Addr, false)
	if _, err := s.GetItem(ctx, "oauth"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("GetItem before SetItem: %v", err)
	}
	const value = `{"tokens": "item-value-3b2a"}`
	if err := s.SetItem(ctx, "oauth", "mcpd OAuth tokens", value); err != nil {
		t.Fatal(err)
	}
	if err := s.SetItem(ctx, "oauth", "mcpd OAuth tokens", value+" "); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetItem(ctx, "oauth"); err != nil || got != value+" " {
		t.Fatalf("GetItem = %q, %v", got, err)
	}
	cmd := exec.CommandContext(ctx, "secret-tool", "lookup", "service", "mcpd", "kind", "oauth")
	cmd.Env = append(os.Environ(), k.Env()...)
	if out, err := cmd.Output(); err != nil || string(out) != value+" " {
		t.Errorf("secret-tool lookup service mcpd kind oauth = %q, %v", out, err)
	}
	if err := s.Set(ctx, "A", "a"); err != nil {
		t.Fatal(err)
	}
	if names, err := s.List(ctx); err != nil || !cmp.Equal(names, []string{"A"}) {
		t.Errorf("List = %v, %v; want the named secrets only", names, err)
	}
	if err := s.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetItem(ctx, "oauth"); !errors.Is(err, secrets.ErrLocked) || got != "" || strings.Contains(err.Error(), "item-value") {
		t.Errorf("GetItem from a locked keyring = %q, %v", got, err)
	}
	nobus, _ := open(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), false)
	if err := nobus.SetItem(ctx, "oauth", "x", "v"); !errors.Is(err, secrets.ErrNoKeyring) {
		t.Errorf("SetItem without a bus: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the fallback file was written: %v", err)
	}
}
