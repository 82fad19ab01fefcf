package importer

import (
	"context"
	"fmt"

	"github.com/mcpd-dev/mcpd/internal/hosts"
)

// Connect is what one connect run has read: the user's environment, how
// a host reaches mcpd, mcpd's config (which the plans add servers to) and
// the mover of the secrets found.
type Connect struct {
	Env     hosts.Env
	Reach   hosts.Mcpd
	Config  *McpdConfig
	Secrets *SecretMover
}

// ConnectOptions are connect's flags that change a plan.
type ConnectOptions struct {
	// Aggregate: one entry for all of a host's servers (--aggregate).
	Aggregate bool
	// MoveSecrets: the literal secrets go to the store (--move-secrets).
	MoveSecrets bool
	// Force: rewrite a running host's file (--force).
	Force bool
	// DryRun: plan only (--dry-run).
	DryRun bool
}

// HostPlan is what connect does to one host's file.
type HostPlan struct {
	Opened *hosts.Opened
	// Targets are the entries pointed at mcpd, each with how.
	Targets map[*hosts.Entry]hosts.Target
	// Aggregated are the entries --aggregate removes, each with its mcpd
	// server.
	Aggregated map[*hosts.Entry]string
	// After is the file as it will be; Changes what changed in it.
	After   []byte
	Changes []hosts.Change
}

// PlanHost decides what becomes of each entry of h's files (opened): all
// of them or, on a clash with mcpd's servers, none. The servers it needs
// are added to c.Config. notes are for the user (what was left as it is
// or changed, the secrets without MoveSecrets); moved the secrets moved
// with it. On an error past the entries, notes and moved are returned
// with it and c.Config is as before.
func (c *Connect) PlanHost(ctx context.Context, h *hosts.Host, opened []*hosts.Opened, o ConnectOptions) (plans []*HostPlan, notes, moved []string, err error) {
	var added []string
	for _, op := range opened {
		p := &HostPlan{Opened: op, Targets: map[*hosts.Entry]hosts.Target{}, Aggregated: map[*hosts.Entry]string{}}
		for _, e := range op.Entries {
			ref := fmt.Sprintf("%s: %q in %s", op.File.Path, e.Name, e.Where)
			name, lines, ok, err := c.entry(ctx, h, op, e, ref, o, &notes)
			if err != nil {
				return nil, nil, nil, err
			}
			moved = append(moved, lines...)
			if !ok {
				continue
			}
			if name.isNew {
				added = append(added, name.name)
			}
			if o.Aggregate {
				if why := e.Unaggregated(); why != "" {
					notes = append(notes, fmt.Sprintf("%s: kept as an entry of its own: %s", ref, why))
				} else {
					p.Aggregated[e] = name.name
					continue
				}
			}
			p.Targets[e] = c.Reach.Target(h, name.name, e.Root())
		}
		plans = append(plans, p)
	}
	for _, p := range plans {
		if err := c.apply(h, p, o); err != nil {
			c.Config.forget(added)
			return nil, notes, moved, err
		}
	}
	return plans, notes, moved, nil
}

// placed is the mcpd server an entry goes to, and whether it is new.
type placed struct {
	name  string
	isNew bool
}

// entry converts one entry to its mcpd server and places it in
// c.Config; ok is false for an entry left as it is. Notes are appended to
// *notes; the secret lines are returned with MoveSecrets, else noted.
func (c *Connect) entry(ctx context.Context, h *hosts.Host, op *hosts.Opened, e *hosts.Entry, ref string, o ConnectOptions, notes *[]string) (p placed, moved []string, ok bool, err error) {
	switch e.State {
	case hosts.Unsupported:
		*notes = append(*notes, fmt.Sprintf("%s: left as it is: %s", ref, e.Why))
		return p, nil, false, nil
	case hosts.Connected:
		return p, nil, false, nil
	}
	s, why, skip := FromEntry(op, e, c.Env.Home)
	*notes = append(*notes, prefixed(ref, why)...)
	if skip != "" {
		*notes = append(*notes, fmt.Sprintf("%s: left as it is: %s", ref, skip))
		return p, nil, false, nil
	}
	// Before Place: a server connected before with its secret moved is
	// the same server once this one's is.
	lines, err := c.Secrets.Apply(ctx, ref, ServerName(e.Name), &s)
	if err != nil {
		return p, nil, false, err
	}
	if o.MoveSecrets {
		moved = lines
	} else {
		*notes = append(*notes, lines...)
	}
	name, isNew, err := c.Config.Place(ServerName(e.Name), s)
	if err != nil {
		return p, nil, false, fmt.Errorf("%s: %w", ref, err)
	}
	if isNew {
		c.Config.Add(name, s)
	}
	return placed{name, isNew}, moved, true, nil
}

// apply makes p's file as it will be, and checks it can be written.
func (c *Connect) apply(h *hosts.Host, p *HostPlan, o ConnectOptions) error {
	plan := hosts.Plan{Point: p.Targets, Aggregate: p.Aggregated,
		Target: func(names []string) hosts.Target { return c.Reach.AggregateTarget(h, names) }}
	var err error
	if p.After, p.Changes, err = p.Opened.Apply(plan); err == nil && len(p.Changes) > 0 {
		err = hosts.Writable(p.Opened.File.Path)
	}
	if err == nil && len(p.Changes) > 0 && !o.Force && !o.DryRun {
		if pid := h.Running(); pid != 0 {
			err = fmt.Errorf("it is running (pid %d) and rewrites its config when it exits; quit it first, or use --force", pid)
		}
	}
	return err
}

func prefixed(ref string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = ref + ": " + l
	}
	return out
}
