package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

// The Secret Service API (https://specifications.freedesktop.org/secret-service/).
const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ssService    = "org.freedesktop.Secret.Service"
	ssCollection = "org.freedesktop.Secret.Collection"
	ssItem       = "org.freedesktop.Secret.Item"
	ssPrompt     = "org.freedesktop.Secret.Prompt"
	// noPrompt is the path a method returns when no prompt is needed.
	noPrompt = dbus.ObjectPath("/")
)

// secret is the Secret Service's Secret struct, (oayays).
type secret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// service is the Secret Service backend: a private session bus
// connection and a "plain" session (the bus is the user's own; the
// transport encryption of the dh-ietf1024 algorithm adds nothing against
// a peer that can already talk to the bus as the user).
type service struct {
	conn        *dbus.Conn
	session     dbus.ObjectPath
	who         string // the implementation's program name, for describe
	interactive bool
	timeout     time.Duration
}

// connect opens the session bus and a session with its Secret Service;
// the error says why there is none.
func connect(opts Options) (*service, error) {
	addr := busAddress(opts)
	if addr == "" {
		return nil, errors.New("no session bus: DBUS_SESSION_BUS_ADDRESS is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	conn, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("no session bus: %w", err)
	}
	s := &service{conn: conn, interactive: opts.Interactive, timeout: opts.Timeout}
	fail := func(err error) (*service, error) {
		conn.Close()
		return nil, err
	}
	var owned bool
	bus := conn.BusObject()
	if err := bus.CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, ssName).Store(&owned); err != nil {
		return fail(fmt.Errorf("no Secret Service: %w", err))
	}
	if !owned {
		var names []string
		if err := bus.CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil || !slices.Contains(names, ssName) {
			return fail(errors.New("no Secret Service on the session bus (org.freedesktop.secrets)"))
		}
	}
	var out dbus.Variant
	if err := conn.Object(ssName, ssPath).CallWithContext(ctx, ssService+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &s.session); err != nil {
		return fail(fmt.Errorf("no Secret Service: open session: %w", err))
	}
	s.who = owner(ctx, conn)
	return s, nil
}

// dial connects to the bus at addr (authentication and Hello included)
// within ctx. (dbus.WithContext would close the connection when ctx ends,
// not just bound the dial.)
func dial(ctx context.Context, addr string) (*dbus.Conn, error) {
	type result struct {
		conn *dbus.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		conn, err := dbus.Connect(addr)
		ch <- result{conn, err}
	}()
	select {
	case r := <-ch:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, fmt.Errorf("connect %s: %w", addr, ctx.Err())
	}
}

// owner names the program that owns the Secret Service name.
func owner(ctx context.Context, conn *dbus.Conn) string {
	var pid uint32
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, ssName).Store(&pid); err != nil {
		return ""
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		return filepath.Base(exe)
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		return strings.TrimSpace(string(comm))
	}
	return ""
}

func (s *service) describe() string {
	if s.who == "" {
		return "Secret Service"
	}
	return "Secret Service (" + s.who + ")"
}

func (s *service) closed() bool { return !s.conn.Connected() }

func (s *service) close() { s.conn.Close() }

// call calls method on the object at path with the store's timeout and
// stores the reply in out.
func (s *service) call(ctx context.Context, path dbus.ObjectPath, method string, args []any, out ...any) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	call := s.conn.Object(ssName, path).CallWithContext(ctx, method, 0, args...)
	if call.Err != nil {
		return call.Err
	}
	if len(out) == 0 {
		return nil
	}
	return call.Store(out...)
}

// search returns the unlocked and locked items with attrs.
func (s *service) search(ctx context.Context, attrs map[string]string) (unlocked, locked []dbus.ObjectPath, err error) {
	err = s.call(ctx, ssPath, ssService+".SearchItems", []any{attrs}, &unlocked, &locked)
	if err != nil {
		return nil, nil, fmt.Errorf("search: %w", err)
	}
	return unlocked, locked, nil
}

func attrs(name string) map[string]string {
	return map[string]string{"service": Service, "name": name}
}

// unlock unlocks objs (items or collections): ErrLocked unless the store
// is interactive and the user answers the prompt.
func (s *service) unlock(ctx context.Context, objs []dbus.ObjectPath) ([]dbus.ObjectPath, error) {
	if !s.interactive {
		return nil, ErrLocked
	}
	var done []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := s.call(ctx, ssPath, ssService+".Unlock", []any{objs}, &done, &prompt); err != nil {
		return nil, fmt.Errorf("unlock: %w", err)
	}
	if prompt == noPrompt {
		return done, nil
	}
	dismissed, result, err := s.prompt(ctx, prompt)
	if err != nil {
		return nil, err
	}
	if dismissed {
		return nil, fmt.Errorf("unlock prompt dismissed: %w", ErrLocked)
	}
	if paths, ok := result.Value().([]dbus.ObjectPath); ok {
		done = append(done, paths...)
	}
	if len(done) == 0 {
		return nil, ErrLocked
	}
	return done, nil
}

// prompt shows the prompt at path and waits for its Completed signal, at
// most PromptTimeout (then it is dismissed).
func (s *service) prompt(ctx context.Context, path dbus.ObjectPath) (dismissed bool, result dbus.Variant, err error) {
	if !s.interactive {
		return false, result, ErrLocked
	}
	match := []dbus.MatchOption{dbus.WithMatchObjectPath(path), dbus.WithMatchInterface(ssPrompt), dbus.WithMatchMember("Completed")}
	if err := s.conn.AddMatchSignalContext(ctx, match...); err != nil {
		return false, result, fmt.Errorf("prompt: %w", err)
	}
	defer s.conn.RemoveMatchSignal(match...)
	ch := make(chan *dbus.Signal, 8)
	s.conn.Signal(ch)
	defer s.conn.RemoveSignal(ch)
	if err := s.call(ctx, path, ssPrompt+".Prompt", []any{""}); err != nil {
		return false, result, fmt.Errorf("prompt: %w", err)
	}
	wait := time.NewTimer(PromptTimeout)
	defer wait.Stop()
	for {
		select {
		case sig := <-ch:
			if sig.Path != path || sig.Name != ssPrompt+".Completed" || len(sig.Body) < 2 {
				continue
			}
			dismissed, _ = sig.Body[0].(bool)
			result, _ = sig.Body[1].(dbus.Variant)
			return dismissed, result, nil
		case <-wait.C:
			_ = s.call(context.Background(), path, ssPrompt+".Dismiss", nil)
			return true, result, nil
		case <-ctx.Done():
			_ = s.call(context.Background(), path, ssPrompt+".Dismiss", nil)
			return true, result, ctx.Err()
		}
	}
}

func (s *service) get(ctx context.Context, name string) (string, error) {
	return s.getItem(ctx, attrs(name))
}

// getItem returns the secret of the item with attributes a.
func (s *service) getItem(ctx context.Context, a map[string]string) (string, error) {
	unlocked, locked, err := s.search(ctx, a)
	if err != nil {
		return "", err
	}
	if len(unlocked) == 0 && len(locked) > 0 {
		if unlocked, err = s.unlock(ctx, locked); err != nil {
			return "", err
		}
	}
	if len(unlocked) == 0 {
		return "", ErrNotFound
	}
	var sec secret
	if err := s.call(ctx, unlocked[0], ssItem+".GetSecret", []any{s.session}, &sec); err != nil {
		if isLockedErr(err) {
			return "", ErrLocked
		}
		return "", fmt.Errorf("get secret: %w", err)
	}
	return string(sec.Value), nil
}

// isLockedErr reports whether err is the Secret Service's IsLocked error.
func isLockedErr(err error) bool {
	var de dbus.Error
	return errors.As(err, &de) && de.Name == "org.freedesktop.Secret.Error.IsLocked"
}

// defaultCollection returns the collection new items go to, unlocked.
func (s *service) defaultCollection(ctx context.Context) (dbus.ObjectPath, error) {
	var coll dbus.ObjectPath
	if err := s.call(ctx, ssPath, ssService+".ReadAlias", []any{"default"}, &coll); err != nil {
		return "", fmt.Errorf("read the default collection: %w", err)
	}
	if coll == noPrompt || coll == "" {
		return "", errors.New("the Secret Service has no default keyring: create one (e.g. with Seahorse or your keyring's settings)")
	}
	v, err := s.conn.Object(ssName, coll).GetProperty(ssCollection + ".Locked")
	if err != nil {
		return "", fmt.Errorf("default keyring: %w", err)
	}
	if locked, _ := v.Value().(bool); locked {
		if _, err := s.unlock(ctx, []dbus.ObjectPath{coll}); err != nil {
			return "", err
		}
	}
	return coll, nil
}

func (s *service) set(ctx context.Context, name, value string) error {
	return s.setItem(ctx, "mcpd secret "+name, attrs(name), value)
}

// setItem stores value as the item with attributes a, replacing one.
func (s *service) setItem(ctx context.Context, label string, a map[string]string, value string) error {
	coll, err := s.defaultCollection(ctx)
	if err != nil {
		return err
	}
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant(label),
		ssItem + ".Attributes": dbus.MakeVariant(a),
	}
	sec := secret{Session: s.session, Value: []byte(value), ContentType: "text/plain; charset=utf8"}
	var item, prompt dbus.ObjectPath
	if err := s.call(ctx, coll, ssCollection+".CreateItem", []any{props, sec, true}, &item, &prompt); err != nil {
		if isLockedErr(err) {
			return ErrLocked
		}
		return fmt.Errorf("create item: %w", err)
	}
	if prompt != noPrompt {
		dismissed, _, err := s.prompt(ctx, prompt)
		if err != nil {
			return err
		}
		if dismissed {
			return errors.New("create item: prompt dismissed")
		}
	}
	return nil
}

func (s *service) del(ctx context.Context, name string) error {
	return s.delItem(ctx, attrs(name))
}

// delItem removes the items with attributes a.
func (s *service) delItem(ctx context.Context, a map[string]string) error {
	unlocked, locked, err := s.search(ctx, a)
	if err != nil {
		return err
	}
	if len(locked) > 0 {
		more, err := s.unlock(ctx, locked)
		if err != nil {
			return err
		}
		unlocked = append(unlocked, more...)
	}
	if len(unlocked) == 0 {
		return ErrNotFound
	}
	for _, item := range unlocked {
		var prompt dbus.ObjectPath
		if err := s.call(ctx, item, ssItem+".Delete", nil, &prompt); err != nil {
			if isLockedErr(err) {
				return ErrLocked
			}
			return fmt.Errorf("delete: %w", err)
		}
		if prompt != noPrompt {
			if dismissed, _, err := s.prompt(ctx, prompt); err != nil {
				return err
			} else if dismissed {
				return errors.New("delete: prompt dismissed")
			}
		}
	}
	return nil
}

func (s *service) list(ctx context.Context) ([]string, error) {
	unlocked, locked, err := s.search(ctx, map[string]string{"service": Service})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, item := range append(unlocked, locked...) {
		v, err := s.conn.Object(ssName, item).GetProperty(ssItem + ".Attributes")
		if err != nil {
			return nil, fmt.Errorf("attributes: %w", err)
		}
		if a, ok := v.Value().(map[string]string); ok && a["name"] != "" {
			names = append(names, a["name"])
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Lock locks the default keyring (tests, and a user who wants to). It
// never prompts.
func (s *Store) Lock(ctx context.Context) error {
	b := s.pick()
	svc, ok := b.(*service)
	if !ok {
		return errors.New("lock: no Secret Service (" + b.describe() + ")")
	}
	var coll dbus.ObjectPath
	if err := svc.call(ctx, ssPath, ssService+".ReadAlias", []any{"default"}, &coll); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := svc.call(ctx, ssPath, ssService+".Lock", []any{[]dbus.ObjectPath{coll}}, &locked, &prompt); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}
