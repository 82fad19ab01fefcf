package metrics

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// Family describes one of mcpd's own metrics (those named mcpd_...), as
// registered: docs/operations.md's metric table is generated from
// Reference.
type Family struct {
	Name   string
	Type   string // counter, gauge or histogram
	Help   string
	Labels []string
}

// Reference returns every mcpd_ metric family, sorted by name. It gathers
// a registry made by New over a source with one shared server of one
// instance and an empty subscription manager, so that every family the
// collector can emit is present.
func Reference() ([]Family, error) {
	subs := subscriptions.New(subscriptions.Options{})
	defer subs.Close()
	m := New(referenceSource{subs}, nil)
	m.ObserveCall("s", "tools/call", 0)
	mfs, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	var out []Family
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), Namespace+"_") {
			continue
		}
		f := Family{Name: mf.GetName(), Type: strings.ToLower(mf.GetType().String()), Help: mf.GetHelp()}
		if len(mf.Metric) > 0 {
			f.Labels = labelNames(mf.Metric[0])
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func labelNames(m *dto.Metric) []string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	return names
}

// referenceSource is the source Reference gathers: one server shared per
// client, with one instance.
type referenceSource struct{ subs *subscriptions.Manager }

func (r referenceSource) Status() []supervisor.Status {
	in := supervisor.Status{Name: "s", Instance: "app", State: supervisor.StateReady}
	return []supervisor.Status{{
		Name: "s", State: supervisor.StateReady, Share: supervisor.ShareClient,
		Instances: []supervisor.Status{in},
	}}
}

func (r referenceSource) Subscriptions() *subscriptions.Manager { return r.subs }
