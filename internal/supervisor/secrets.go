package supervisor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// SecretSource resolves the ${secret:NAME} references of a server's args,
// env and headers when it starts (internal/secrets.Store). Get's errors
// name the secret and never hold a value.
type SecretSource interface {
	Get(ctx context.Context, name string) (string, error)
}

// secretError is why a server's secrets could not be resolved: a missing
// secret, a locked keyring. It is a permanent failure of the start
// (StateFailed: the user sets the secret or unlocks the keyring, then
// restarts the server), never retried into a crash loop.
type secretError struct {
	server string
	err    error
}

func (e *secretError) Error() string { return fmt.Sprintf("start %q: %v", e.server, e.err) }

func (e *secretError) Unwrap() error  { return e.err }
func (e *secretError) Server() string { return e.server }

// resolved is a spec's args, env and headers with the secrets' values.
type resolved struct {
	args    []string
	env     map[string]string
	headers map[string]string
}

// resolveSecrets returns spec's args, env and remote headers with their
// ${secret:NAME} references replaced; those without any are spec's own.
func (sv *server) resolveSecrets(ctx context.Context, spec *Spec) (resolved, error) {
	r := resolved{args: spec.Args, env: spec.Env}
	if spec.Remote != nil {
		r.headers = spec.Remote.Headers
	}
	get := func(name string) (string, error) {
		src := sv.sup.opts.Secrets
		if src == nil {
			return "", fmt.Errorf("secret %s: this mcpd has no secret store", name)
		}
		return src.Get(ctx, name)
	}
	fail := func(err error) (resolved, error) { return resolved{}, &secretError{server: spec.Name, err: err} }
	copied := false
	for i, a := range spec.Args {
		if !config.HasSecrets(a) {
			continue
		}
		v, err := config.ResolveSecrets(a, get)
		if err != nil {
			return fail(err)
		}
		if !copied {
			r.args, copied = slices.Clone(spec.Args), true
		}
		r.args[i] = v
	}
	var err error
	if r.env, err = resolveMap(spec.Env, get); err != nil {
		return fail(err)
	}
	if r.headers, err = resolveMap(r.headers, get); err != nil {
		return fail(err)
	}
	return r, nil
}

// resolveMap is resolveSecrets for env or headers: m itself when it
// references no secret, else a resolved copy.
func resolveMap(m map[string]string, get func(string) (string, error)) (map[string]string, error) {
	var out map[string]string
	for k, v := range m {
		if !config.HasSecrets(v) {
			continue
		}
		x, err := config.ResolveSecrets(v, get)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = maps.Clone(m)
		}
		out[k] = x
	}
	if out == nil {
		return m, nil
	}
	return out, nil
}
