package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// FileName is the name of the credentials file inside the state directory.
const FileName = "oauth.json"

// storeVersion is the format version of the credentials file.
const storeVersion = 1

// tokenKey identifies a token: who issued it, for which resource, to which
// client. Two servers with the same key share one token.
type tokenKey struct {
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
	ClientID string `json:"client_id"`
}

// clientRecord is a client registered dynamically (RFC 7591) with one
// authorization server; it is kept until the server forgets it.
type clientRecord struct {
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthMethod   string    `json:"token_endpoint_auth_method,omitempty"`
	RedirectURIs []string  `json:"redirect_uris,omitempty"`
	RegisteredAt time.Time `json:"registered_at"`
}

// tokenRecord is one token with what refreshing it needs.
type tokenRecord struct {
	Key           tokenKey  `json:"key"`
	TokenEndpoint string    `json:"token_endpoint"`
	AuthMethod    string    `json:"token_endpoint_auth_method,omitempty"`
	AccessToken   string    `json:"access_token"`
	TokenType     string    `json:"token_type,omitempty"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expiry        time.Time `json:"expiry,omitzero"`
	Scopes        []string  `json:"scopes,omitempty"`
	ObtainedAt    time.Time `json:"obtained_at"`
}

// binding ties a configured server to the token its last login got.
type binding struct {
	ServerURL string   `json:"server_url"`
	Key       tokenKey `json:"key"`
	// ConfiguredClient is true when the client id came from the config
	// (its secret stays there), false for a registered one.
	ConfiguredClient bool `json:"configured_client,omitempty"`
}

// storeData is the content of the credentials file.
type storeData struct {
	Version int                 `json:"version"`
	Clients []*clientRecord     `json:"clients,omitempty"`
	Tokens  []*tokenRecord      `json:"tokens,omitempty"`
	Servers map[string]*binding `json:"servers,omitempty"`
}

func (d *storeData) client(issuer string) *clientRecord {
	for _, c := range d.Clients {
		if c.Issuer == issuer {
			return c
		}
	}
	return nil
}

// dropClient forgets issuer's registration of clientID ("": any).
func (d *storeData) dropClient(issuer, clientID string) {
	kept := d.Clients[:0]
	for _, c := range d.Clients {
		if c.Issuer != issuer || (clientID != "" && c.ClientID != clientID) {
			kept = append(kept, c)
		}
	}
	d.Clients = kept
}

func (d *storeData) token(k tokenKey) *tokenRecord {
	for _, t := range d.Tokens {
		if t.Key == k {
			return t
		}
	}
	return nil
}

func (d *storeData) putToken(t *tokenRecord) {
	for i, old := range d.Tokens {
		if old.Key == t.Key {
			d.Tokens[i] = t
			return
		}
	}
	d.Tokens = append(d.Tokens, t)
}

func (d *storeData) dropToken(k tokenKey) {
	kept := d.Tokens[:0]
	for _, t := range d.Tokens {
		if t.Key != k {
			kept = append(kept, t)
		}
	}
	d.Tokens = kept
}

// keyInUse reports whether a server other than except is bound to k.
func (d *storeData) keyInUse(k tokenKey, except string) bool {
	for name, b := range d.Servers {
		if name != except && b.Key == k {
			return true
		}
	}
	return false
}

// ensureDir creates dir with mode 0700, or tightens an existing one to it.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth: state directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("oauth: state directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("oauth: state directory %s is not a directory", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("oauth: state directory: %w", err)
		}
	}
	return nil
}

// loadStore reads the credentials file; a missing file is an empty store.
// A file others may read is tightened to 0600 first.
func loadStore(path string) (*storeData, error) {
	b, err := fileStore{path: path}.Load(context.Background())
	if err != nil {
		return emptyStore(), err
	}
	return decodeStore(b, "file "+path)
}

func emptyStore() *storeData {
	return &storeData{Version: storeVersion, Servers: map[string]*binding{}}
}

// decodeStore decodes the credentials document b (nil: none stored), kept
// where (for errors).
func decodeStore(b []byte, where string) (*storeData, error) {
	d := emptyStore()
	if b == nil {
		return d, nil
	}
	if err := json.Unmarshal(b, d); err != nil {
		// The decoder's message quotes no input, only offsets and types.
		return emptyStore(), fmt.Errorf("oauth: credentials in %s are not valid: %w", where, err)
	}
	if d.Version != storeVersion {
		return emptyStore(), fmt.Errorf("oauth: credentials in %s have version %d, want %d", where, d.Version, storeVersion)
	}
	if d.Servers == nil {
		d.Servers = map[string]*binding{}
	}
	return d, nil
}

// merge puts the registrations, tokens and bindings of d (made in memory
// while the stored ones could not be read) over stored.
func merge(stored, d *storeData) *storeData {
	for _, c := range d.Clients {
		stored.dropClient(c.Issuer, "")
		stored.Clients = append(stored.Clients, c)
	}
	for _, t := range d.Tokens {
		stored.putToken(t)
	}
	for name, b := range d.Servers {
		stored.Servers[name] = b
	}
	return stored
}

// encodeStore is the content of the credentials file for d.
func encodeStore(d *storeData) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("oauth: encode credentials: %w", err)
	}
	return b, nil
}

// writeStore writes b to path atomically: a 0600 temporary file in the same
// directory, synced, then renamed over the old one.
func writeStore(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := ensureDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+FileName+".*")
	if err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("oauth: write credentials: %w", err)
	}
	ok = true
	return nil
}
