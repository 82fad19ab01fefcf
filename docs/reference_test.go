package docs

import (
	"flag"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/docgen"
	"github.com/mcpd-dev/mcpd/internal/metrics"
)

// update rewrites the generated sections instead of comparing them (make
// docs).
var update = flag.Bool("update", false, "rewrite the generated sections of the pages")

// configKeyTable is docs/configuration.md's table of every key, from
// internal/config's key table (the one the parser accepts keys from).
func configKeyTable() string {
	var rows [][]string
	for _, k := range config.Keys() {
		name, where := k.Name, "server"
		switch k.In {
		case config.InTop:
			where = "top level"
		case config.InServer:
		default:
			name = strings.TrimPrefix(k.In, "server.") + "." + k.Name
			if k.In == config.InAudit {
				where = "top level"
			}
		}
		rows = append(rows, []string{docgen.Code(name), where, k.Type, k.Default, k.Doc})
	}
	return docgen.Table([]string{"key", "in", "type", "default", "meaning"}, rows)
}

// metricsTable is docs/operations.md's table of mcpd's metrics, from the
// registry internal/metrics builds.
func metricsTable(t *testing.T) string {
	fams, err := metrics.Reference()
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, f := range fams {
		labels := make([]string, len(f.Labels))
		for i, l := range f.Labels {
			labels[i] = docgen.Code(l)
		}
		rows = append(rows, []string{docgen.Code(f.Name), f.Type, strings.Join(labels, ", "), f.Help})
	}
	return docgen.Table([]string{"metric", "type", "labels", "meaning"}, rows)
}

// TestConfigKeyTableCurrent fails when configuration.md's key table is not
// what internal/config's keys make.
func TestConfigKeyTableCurrent(t *testing.T) {
	if err := docgen.Sync("configuration.md", "config keys", configKeyTable(), *update); err != nil {
		t.Error(err)
	}
}

// TestMetricsTableCurrent fails when operations.md's metric table is not
// what internal/metrics registers.
func TestMetricsTableCurrent(t *testing.T) {
	if err := docgen.Sync("operations.md", "metrics", metricsTable(t), *update); err != nil {
		t.Error(err)
	}
}
