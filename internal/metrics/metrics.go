// Package metrics exposes mcpd's counters as Prometheus metrics (the
// --metrics-listen flag of mcpd).
//
// Nearly everything is read at scrape time from counters the daemon keeps
// anyway: a custom collector turns supervisor.Status (calls, failures,
// restarts, state, cache) and the subscription manager's fan-out totals into
// metrics, so the request path pays nothing for them. The one exception is
// the request latency histogram (mcpd_request_duration_seconds, per server
// and MCP method), which the API layer feeds through ObserveCall; its label
// children are resolved once and kept, so an observation costs two atomic
// loads and the histogram's own work. The Go runtime and process collectors
// are registered too.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// Namespace prefixes every mcpd metric.
const Namespace = "mcpd"

// LatencyBuckets are the upper bounds, in seconds, of the request latency
// histogram: from a cache hit (tens of µs) to a long tool call.
var LatencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
}

// Source is what the collector reads at scrape time;
// *supervisor.Supervisor implements it.
type Source interface {
	// Status returns every configured server's status.
	Status() []supervisor.Status
	// Subscriptions returns the subscription manager (nil: no fan-out
	// metrics).
	Subscriptions() *subscriptions.Manager
}

var _ Source = (*supervisor.Supervisor)(nil)

// Metrics owns mcpd's Prometheus registry. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	src     Source
	log     *zap.Logger
	latency *prometheus.HistogramVec

	// servers maps a server name to its pre-resolved histogram children.
	// It is copied on write (mu serializes writers), so ObserveCall reads
	// it without a lock.
	servers atomic.Pointer[map[string]*serverHists]
	mu      sync.Mutex
}

// serverHists are one server's histogram children, one per method slot,
// resolved on first use.
type serverHists struct {
	byMethod [numMethodSlots]atomic.Pointer[observer]
}

// observer boxes a prometheus.Observer for atomic.Pointer.
type observer struct{ prometheus.Observer }

// New returns the metrics of src with a registry holding the status
// collector, the latency histogram, mcpd_build_info and the Go runtime and
// process collectors. log may be nil.
func New(src Source, log *zap.Logger) *Metrics {
	if log == nil {
		log = zap.NewNop()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		src: src,
		log: log,
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "request_duration_seconds",
			Help:      "Time from an app's MCP request reaching mcpd's API to its answer (cache hits included), by server and MCP method (other: any method outside the MCP spec's list).",
			Buckets:   LatencyBuckets,
		}, []string{"server", "method"}),
	}
	empty := map[string]*serverHists{}
	m.servers.Store(&empty)
	m.reg.MustRegister(
		&statusCollector{m: m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace:   Namespace,
			Name:        "build_info",
			Help:        "Always 1; the version label is mcpd's version.",
			ConstLabels: prometheus.Labels{"version": version.Version},
		}, func() float64 { return 1 }),
	)
	return m
}

// Registry returns the registry, for tests and for registering more
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:          zap.NewStdLog(m.log.Named("promhttp")),
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          m.reg, // promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	})
}

// ObserveCall records the duration of one MCP request of an app to server;
// it implements api.CallObserver. After the first request of a server and
// method it allocates nothing.
func (m *Metrics) ObserveCall(server, method string, d time.Duration) {
	sh := (*m.servers.Load())[server]
	if sh == nil {
		sh = m.addServer(server)
	}
	i := methodSlot(method)
	o := sh.byMethod[i].Load()
	if o == nil {
		o = &observer{m.latency.WithLabelValues(server, methodLabel(i))}
		if !sh.byMethod[i].CompareAndSwap(nil, o) {
			o = sh.byMethod[i].Load()
		}
	}
	o.Observe(d.Seconds())
}

// addServer returns server's histogram children, adding an empty set.
func (m *Metrics) addServer(server string) *serverHists {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.servers.Load()
	if sh := cur[server]; sh != nil {
		return sh
	}
	next := make(map[string]*serverHists, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	sh := &serverHists{}
	next[server] = sh
	m.servers.Store(&next)
	return sh
}

// prune forgets the histograms of servers that are no longer configured
// (removed by a reload), so their series leave the exposition.
func (m *Metrics) prune(configured map[string]bool) {
	cur := *m.servers.Load()
	stale := false
	for name := range cur {
		if !configured[name] {
			stale = true
			break
		}
	}
	if !stale {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur = *m.servers.Load()
	next := make(map[string]*serverHists, len(cur))
	var gone []string
	for name, sh := range cur {
		if configured[name] {
			next[name] = sh
		} else {
			gone = append(gone, name)
		}
	}
	m.servers.Store(&next)
	for _, name := range gone {
		m.latency.DeletePartialMatch(prometheus.Labels{"server": name})
	}
}

// methods are the MCP request methods an app can send through mcpd that
// get their own label value; anything else is counted as "other", so that
// the label set stays bounded whatever apps send.
var methods = [...]string{
	"tools/list",
	"tools/call",
	"prompts/list",
	"prompts/get",
	"resources/list",
	"resources/templates/list",
	"resources/read",
	"resources/subscribe",
	"resources/unsubscribe",
	"completion/complete",
	"logging/setLevel",
	"ping",
	"tasks/get",
	"tasks/list",
	"tasks/result",
	"tasks/cancel",
}

const (
	otherSlot      = len(methods)
	numMethodSlots = len(methods) + 1
)

// methodSlot returns the index of method in methods, or otherSlot.
func methodSlot(method string) int {
	for i, m := range methods {
		if m == method {
			return i
		}
	}
	return otherSlot
}

func methodLabel(slot int) string {
	if slot == otherSlot {
		return "other"
	}
	return methods[slot]
}
