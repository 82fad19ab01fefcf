package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// states are every supervisor state, for mcpd_server_state.
var states = []supervisor.State{
	supervisor.StateStopped, supervisor.StateStarting, supervisor.StateReady,
	supervisor.StateBackoff, supervisor.StateCrashLoop, supervisor.StateStopping,
	supervisor.StateFailed, supervisor.StateLoginRequired,
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

// Descriptions of the metrics read at scrape time.
var (
	descServerState   = desc("server_state", "1 for the state the server is in, 0 for the others.", "server", "state")
	descRestarts      = desc("server_restarts_total", "Restarts of the server's child process (automatic and by an operator).", "server")
	descCalls         = desc("calls_total", "Requests sent to the server's child (cache hits are not calls).", "server")
	descCallsFailed   = desc("calls_failed_total", "Calls that failed or returned a JSON-RPC error of the child.", "server")
	descInFlight      = desc("calls_in_flight", "Calls waiting for the child's answer now.", "server")
	descLinesSkipped  = desc("stdout_lines_skipped_total", "Lines of the child's stdout that were not JSON objects.", "server")
	descLinesOversize = desc("stdout_lines_oversize_total", "Lines of the child's stdout discarded for exceeding the maximum line size.", "server")
	descRespDropped   = desc("responses_dropped_total", "Late or unsolicited responses of the child, dropped.", "server")
	descMsgInvalid    = desc("messages_invalid_total", "JSON objects of the child that were neither a request, a response nor a notification, skipped.", "server")
	descToolChanges   = desc("tool_changes_pending", "Tools whose definitions differ from the pinned ones, awaiting mcpdctl tools approve.", "server")

	// The instances of a shared server (share client or root): the
	// server's own series above sum them up.
	descInstances        = desc("server_instances", "Instances a shared server (share client or root) runs now.", "server")
	descInstanceState    = desc("instance_state", "1 for the state the instance of a shared server is in, 0 for the others.", "server", "instance", "state")
	descInstanceRestarts = desc("instance_restarts_total", "Restarts of the child of an instance of a shared server.", "server", "instance")
	descInstanceCalls    = desc("instance_calls_total", "Requests sent to the child of an instance of a shared server.", "server", "instance")
	descInstanceFailed   = desc("instance_calls_failed_total", "Calls of an instance of a shared server that failed or returned a JSON-RPC error.", "server", "instance")
	descInstanceInFlight = desc("instance_calls_in_flight", "Calls waiting for the answer of an instance's child now.", "server", "instance")

	descCacheHits          = desc("cache_hits_total", "Requests answered from the server's result cache.", "server")
	descCacheMisses        = desc("cache_misses_total", "Cacheable requests that asked the child.", "server")
	descCacheCoalesced     = desc("cache_coalesced_total", "Requests that shared an identical request in flight (single-flight).", "server")
	descCacheInvalidations = desc("cache_invalidations_total", "Cache entries dropped by notifications, restarts, reloads and clears.", "server")
	descCacheEvictions     = desc("cache_evictions_total", "Cache entries dropped to respect the cache's bounds.", "server")
	descCacheEntries       = desc("cache_entries", "Entries in the server's result cache.", "server")
	descCacheBytes         = desc("cache_bytes", "Bytes held by the server's result cache.", "server")

	descStreams       = desc("subscription_streams", "App subscription streams open now.")
	descStreamsOpened = desc("subscription_streams_opened_total", "App subscription streams ever opened.")
	descQueued        = desc("subscription_queued_events", "Events waiting in the apps' subscription queues now.")
	descDelivered     = desc("subscription_events_delivered_total", "Events handed to apps by their subscription streams.")
	descCoalesced     = desc("subscription_events_coalesced_total", "Events merged into a queued repeat because an app's queue was full.")
	descDropped       = desc("subscription_events_dropped_total", "Events discarded because the app's stream had ended (lagged, failed or closed).")
	descLogsDropped   = desc("subscription_log_messages_dropped_total", "Log messages dropped, oldest first, from full app queues; each app was told how many.")
	descLagged        = desc("subscription_lagged_total", "Streams whose queue overflowed; the app was told to resync.")
)

// statusCollector turns the supervisor's status and the subscription
// manager's totals into metrics at scrape time, and collects the latency
// histogram after pruning the servers a reload removed.
type statusCollector struct {
	m *Metrics
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descServerState, descRestarts, descCalls, descCallsFailed, descInFlight,
		descLinesSkipped, descLinesOversize, descRespDropped, descMsgInvalid, descToolChanges,
		descInstances, descInstanceState, descInstanceRestarts, descInstanceCalls, descInstanceFailed, descInstanceInFlight,
		descCacheHits, descCacheMisses, descCacheCoalesced, descCacheInvalidations,
		descCacheEvictions, descCacheEntries, descCacheBytes,
		descStreams, descStreamsOpened, descQueued, descDelivered, descCoalesced, descDropped, descLogsDropped, descLagged,
	} {
		ch <- d
	}
	c.m.latency.Describe(ch)
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}

	statuses := c.m.src.Status()
	configured := make(map[string]bool, len(statuses))
	for _, st := range statuses {
		n := st.Name
		configured[n] = true
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			gauge(descServerState, v, n, string(s))
		}
		counter(descRestarts, float64(st.Restarts), n)
		counter(descCalls, float64(st.CallsTotal), n)
		counter(descCallsFailed, float64(st.CallsFailed), n)
		gauge(descInFlight, float64(st.CallsInFlight), n)
		counter(descLinesSkipped, float64(st.LinesSkipped), n)
		counter(descLinesOversize, float64(st.LinesOversize), n)
		counter(descRespDropped, float64(st.ResponsesDropped), n)
		counter(descMsgInvalid, float64(st.MessagesInvalid), n)
		gauge(descToolChanges, float64(st.ToolChangesPending), n)
		cs := st.Cache
		counter(descCacheHits, float64(cs.Hits), n)
		counter(descCacheMisses, float64(cs.Misses), n)
		counter(descCacheCoalesced, float64(cs.Coalesced), n)
		counter(descCacheInvalidations, float64(cs.Invalidations), n)
		counter(descCacheEvictions, float64(cs.Evictions), n)
		gauge(descCacheEntries, float64(cs.Entries), n)
		gauge(descCacheBytes, float64(cs.Bytes), n)
		if st.Share == supervisor.ShareClient || st.Share == supervisor.ShareRoot {
			gauge(descInstances, float64(len(st.Instances)), n)
		}
		for _, in := range st.Instances {
			collectInstance(counter, gauge, n, in)
		}
	}

	if subs := c.m.src.Subscriptions(); subs != nil {
		t := subs.Totals()
		gauge(descStreams, float64(t.Streams))
		counter(descStreamsOpened, float64(t.Opened))
		gauge(descQueued, float64(t.Queued))
		counter(descDelivered, float64(t.Delivered))
		counter(descCoalesced, float64(t.Coalesced))
		counter(descDropped, float64(t.Dropped))
		counter(descLogsDropped, float64(t.LogsDropped))
		counter(descLagged, float64(t.Lagged))
	}

	c.m.prune(configured)
	c.m.latency.Collect(ch)
}

// collectInstance emits the series of one instance of the shared server n.
func collectInstance(counter, gauge func(*prometheus.Desc, float64, ...string), n string, in supervisor.Status) {
	k := in.Instance
	for _, s := range states {
		v := 0.0
		if in.State == s {
			v = 1
		}
		gauge(descInstanceState, v, n, k, string(s))
	}
	counter(descInstanceRestarts, float64(in.Restarts), n, k)
	counter(descInstanceCalls, float64(in.CallsTotal), n, k)
	counter(descInstanceFailed, float64(in.CallsFailed), n, k)
	gauge(descInstanceInFlight, float64(in.CallsInFlight), n, k)
}
