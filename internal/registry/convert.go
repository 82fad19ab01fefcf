package registry

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Runtimes are the commands that run each registryType's packages, the
// preferred first. A package's runtimeHint, when it is one of these, is
// tried first.
var Runtimes = map[string][]string{
	"npm":   {"npx"},
	"pypi":  {"uvx"},
	"oci":   {"docker", "podman"},
	"nuget": {"dnx"},
}

// Choice is the way Choose picked to run a server here: a package and its
// runtime, or a remote.
type Choice struct {
	Package *Package // nil for a remote
	Runtime string   // the package's runtime command (npx, uvx, docker, podman, dnx)
	Remote  *Remote  // nil for a package
}

// Kind is "npm", "pypi", "oci", "nuget", or the remote's transport type.
func (c *Choice) Kind() string {
	if c.Package != nil {
		return c.Package.RegistryType
	}
	return c.Remote.Type
}

// ErrNoWay is a server that has no package whose runtime is installed here
// and no remote mcpd can reach.
var ErrNoWay = errors.New("no way to run it here")

// Choose picks how to run s here: the first of its stdio packages whose
// runtime lookPath finds, else its first Streamable HTTP remote, else its
// first SSE remote. The error says why each was passed over.
func Choose(s *Server, lookPath func(string) (string, error)) (*Choice, error) {
	var why []string
	for i := range s.Packages {
		p := &s.Packages[i]
		if t := p.Transport.Type; t != "" && t != "stdio" {
			why = append(why, fmt.Sprintf("%s package %s: transport %q (mcpd runs packages over stdio)", p.RegistryType, p.Identifier, t))
			continue
		}
		cands := Runtimes[p.RegistryType]
		if len(cands) == 0 {
			why = append(why, fmt.Sprintf("%s package %s: mcpd cannot run %s packages", p.RegistryType, p.Identifier, p.RegistryType))
			continue
		}
		if slices.Contains(cands, p.RuntimeHint) {
			cands = append([]string{p.RuntimeHint}, slices.DeleteFunc(slices.Clone(cands), func(s string) bool { return s == p.RuntimeHint })...)
		}
		found := ""
		for _, rt := range cands {
			if _, err := lookPath(rt); err == nil {
				found = rt
				break
			}
		}
		if found == "" {
			why = append(why, fmt.Sprintf("%s package %s: needs %s, not found in PATH", p.RegistryType, p.Identifier, strings.Join(cands, " or ")))
			continue
		}
		return &Choice{Package: p, Runtime: found}, nil
	}
	for _, want := range []string{"streamable-http", "sse"} {
		for i := range s.Remotes {
			if s.Remotes[i].Type == want {
				return &Choice{Remote: &s.Remotes[i]}, nil
			}
		}
	}
	for _, r := range s.Remotes {
		why = append(why, fmt.Sprintf("remote %s: transport %q", r.URL, r.Type))
	}
	if len(why) == 0 {
		why = append(why, "it lists no package and no remote")
	}
	return nil, fmt.Errorf("%s: %w: %s", s.Name, ErrNoWay, strings.Join(why, "; "))
}

// Var is a value Build needs from the user.
type Var struct {
	// Key is how the user names it (--var KEY=VALUE): the environment
	// variable's or header's name, a {variable}'s name, a positional
	// argument's valueHint, a named argument's name without dashes.
	Key string
	// What says what it is, for prompts and errors ("environment variable",
	// "header", "argument", "variable of header Authorization").
	What string
	// Secret is the name a secret value is stored under, "" for a value
	// that is not secret.
	Secret string
	Input
}

// Asker supplies the value of v: ok false when the user gave none (Build
// then uses the default, or reports v missing when it is required).
type Asker func(v Var) (value string, ok bool, err error)

// Config is an mcpd config entry: the JSON shape of one server under
// "mcpServers" that internal/config accepts.
type Config struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Type    string            `json:"type,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Built is what Build made.
type Built struct {
	Config Config
	// Secrets are the values of secret inputs: the entry refers to each as
	// ${NAME}; they belong in mcpd's environment (EnvFile).
	Secrets map[string]string
	// Missing lists the required inputs nobody gave, in order.
	Missing []Var
}

// Build turns the choice into an mcpd config entry, asking for the values
// it needs. Secret values go to Built.Secrets under an environment
// variable name (the variable's own name for an environment variable,
// else LOCAL_KEY in upper case) and the entry refers to them as ${NAME};
// every other value is written literally, "${" escaped as "$${".
func (c *Choice) Build(local string, ask Asker) (*Built, error) {
	b := &builder{local: local, ask: ask, out: &Built{Secrets: map[string]string{}}}
	if c.Remote != nil {
		b.remote(c.Remote)
	} else {
		b.pkg(c.Package, c.Runtime)
	}
	if b.err != nil {
		return nil, b.err
	}
	if len(b.out.Secrets) == 0 {
		b.out.Secrets = nil
	}
	return b.out, nil
}

type builder struct {
	local string
	ask   Asker
	out   *Built
	err   error
}

func (b *builder) remote(r *Remote) {
	cfg := &b.out.Config
	cfg.Type = "http"
	if r.Type == "sse" {
		cfg.Type = "sse"
	}
	cfg.URL = b.fill(r.URL, r.Variables, "url")
	cfg.Headers = b.keyValues(r.Headers, "header")
}

func (b *builder) pkg(p *Package, runtime string) {
	cfg := &b.out.Config
	cfg.Command = runtime
	env := b.keyValues(p.Env, "environment variable")
	rtArgs := b.args(p.RuntimeArgs)
	pkgArgs := b.args(p.PackageArgs)
	var args []string
	switch p.RegistryType {
	case "npm":
		ref := p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
		args = append(append(rtArgs, "-y", ref), pkgArgs...)
	case "pypi":
		// uvx runs a given version as NAME@VERSION.
		ref := p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
		args = append(append(rtArgs, ref), pkgArgs...)
	case "oci":
		args = []string{"run", "-i", "--rm"}
		for _, name := range sortedKeys(env) {
			// The container sees the variable of docker's environment,
			// which is the entry's env: its value stays out of the argv.
			args = append(args, "-e", name)
		}
		args = append(append(append(args, rtArgs...), imageRef(p)), pkgArgs...)
	case "nuget":
		ref := p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
		args = append(rtArgs, ref, "--yes")
		if len(pkgArgs) > 0 {
			// dnx PACKAGE@VERSION -- ARGS, as the server.json spec shows.
			args = append(append(args, "--"), pkgArgs...)
		}
	}
	cfg.Args = args
	cfg.Env = env
}

// imageRef is the package's image with its version as the tag, unless the
// identifier carries a tag or digest already.
func imageRef(p *Package) string {
	id := p.Identifier
	last := id[strings.LastIndex(id, "/")+1:]
	if p.Version == "" || strings.ContainsAny(last, ":@") {
		return id
	}
	return id + ":" + p.Version
}

// keyValues resolves environment variables or headers; those without a
// value are left out.
func (b *builder) keyValues(kvs []KeyValue, what string) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		if v, ok := b.input(Var{Key: kv.Name, What: what, Input: kv.Input}, secretName(b.local, kv.Name, what)); ok {
			out[kv.Name] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// args resolves arguments into an argv.
func (b *builder) args(as []Argument) []string {
	var out []string
	for _, a := range as {
		switch a.Type {
		case "named":
			key := strings.TrimLeft(a.Name, "-")
			v, ok := b.input(Var{Key: key, What: "argument " + a.Name, Input: a.Input}, secretName(b.local, key, "argument"))
			switch {
			case !ok && a.IsRequired && a.Value == "" && a.Default == "":
				// Reported missing by input.
			case !ok:
			case a.Format == "boolean" && v == "true":
				out = append(out, a.Name)
			case a.Format == "boolean" && v == "false":
			default:
				out = append(out, a.Name, v)
			}
		default: // positional
			key := a.ValueHint
			if key == "" {
				key = "arg"
			}
			if v, ok := b.input(Var{Key: key, What: "argument", Input: a.Input}, secretName(b.local, key, "argument")); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// input resolves one input to what the entry holds: its fixed value with
// its {variables} filled, else the user's value or the default. A secret
// value is stored under secret and written as ${secret}.
func (b *builder) input(v Var, secret string) (string, bool) {
	if v.Value != "" {
		return b.fill(v.Value, v.Variables, v.Key), true
	}
	if v.IsSecret {
		v.Secret = secret
	}
	val, ok, err := b.ask(v)
	if err != nil && b.err == nil {
		b.err = err
	}
	if !ok {
		if v.Default == "" {
			if v.IsRequired {
				b.out.Missing = append(b.out.Missing, v)
			}
			return "", false
		}
		val = v.Default
	}
	if v.IsSecret {
		b.out.Secrets[secret] = val
		return "${secret:" + secret + "}", true
	}
	return escape(val), true
}

var braces = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// fill escapes the fixed value s and replaces its {name}s that vars
// defines by their values; the others stay as they are, as the schema
// says.
func (b *builder) fill(s string, vars map[string]Input, owner string) string {
	var out strings.Builder
	last := 0
	for _, m := range braces.FindAllStringSubmatchIndex(s, -1) {
		name := s[m[2]:m[3]]
		in, ok := vars[name]
		if !ok {
			continue
		}
		out.WriteString(escape(s[last:m[0]]))
		last = m[1]
		if v, ok := b.input(Var{Key: name, What: "variable of " + owner, Input: in}, secretName(b.local, name, "variable")); ok {
			out.WriteString(v)
		}
	}
	out.WriteString(escape(s[last:]))
	return out.String()
}

// escape keeps a literal value literal through mcpd's ${VAR} expansion.
func escape(s string) string { return strings.ReplaceAll(s, "${", "$${") }

var notName = regexp.MustCompile(`[^A-Z0-9_]+`)

// secretName is the environment variable holding a secret: an environment
// variable's own name, else LOCAL_KEY in upper case.
func secretName(local, key, what string) string {
	if what == "environment variable" && !notName.MatchString(key) {
		return key
	}
	n := strings.Trim(notName.ReplaceAllString(strings.ToUpper(local+"_"+key), "_"), "_")
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
