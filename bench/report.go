package main

// report is everything one run measured; -json prints it as is, the table
// is printed from it.
type report struct {
	Mode       string          `json:"mode"`
	Machine    machine         `json:"machine"`
	Rounds     int             `json:"rounds"`
	Iterations int             `json:"iterations_per_round"`
	Overhead   []overheadRow   `json:"call_overhead"`
	Throughput []throughputRow `json:"throughput"`
	Lists      []listRow       `json:"cached_lists"`
	CPU        []cpuRow        `json:"cpu_per_call"`
	CPUNote    string          `json:"cpu_note,omitempty"`
	CPURatios  []cpuRatioRow   `json:"cpu_against_baselines"`
	FaceDoor   []faceDoorRow   `json:"httpface_against_grpc_door,omitempty"`            // facedoor.go
	FaceRate   []faceRateRow   `json:"httpface_against_grpc_door_throughput,omitempty"` // facedoorrate.go
	HTTPFace   string          `json:"httpface"`
	Memory     []memoryRow     `json:"memory"`
	Fleet      []fleetRow      `json:"fleet,omitempty"`
	FleetNote  string          `json:"fleet_note,omitempty"`
	Daemon     daemonMemory    `json:"mcpd_memory"`
	FanOut     []fanOutRow     `json:"fan_out"`
	FanOutNote string          `json:"fan_out_note,omitempty"`
	Recovery   *recoveryRow    `json:"recovery,omitempty"`
	RecovNote  string          `json:"recovery_note,omitempty"`
	Startup    startupRow      `json:"startup"`
	Lazy       []lazyRow       `json:"lazy_first_call"`
	Scale      scaleReport     `json:"scale"`
	ScaleNote  string          `json:"scale_note,omitempty"`
	Soak       *soakRow        `json:"soak,omitempty"`
	Trust      []trustRow      `json:"trust_cpu,omitempty"` // trust.go
	Targets    []targetCheck   `json:"targets"`
	Processes  processCheck    `json:"processes"`
	complete   bool
}

// machine describes where the run happened.
type machine struct {
	CPUs      int    `json:"nproc"`
	CPUModel  string `json:"cpu_model"`
	MemTotal  string `json:"mem_total"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
	Node      string `json:"node_version,omitempty"`
	Load      string `json:"loadavg_at_start"`
}

// overheadRow is sequential tools/call echo latency for one server; each
// figure is the median over rounds of that round's percentile.
type overheadRow struct {
	Server    string  `json:"server"`
	DirectP50 float64 `json:"direct_p50_us"`
	DirectP99 float64 `json:"direct_p99_us"`
	McpdP50   float64 `json:"mcpd_p50_us"`
	McpdP99   float64 `json:"mcpd_p99_us"`
	BareP50   float64 `json:"bare_grpc_p50_us"`
	BareP99   float64 `json:"bare_grpc_p99_us"`
	AddedP50  float64 `json:"mcpd_added_p50_us"`
	AddedP99  float64 `json:"mcpd_added_p99_us"`
	RatioP50  float64 `json:"mcpd_over_direct_p50"`
	// BareStreamP50 is a bare server-streaming round trip (CallTool's
	// shape); AddedStreamP50 subtracts it instead of the unary one.
	BareStreamP50  float64 `json:"bare_grpc_stream_p50_us"`
	AddedStreamP50 float64 `json:"mcpd_added_vs_stream_p50_us"`
	// Relay is the least a gRPC-to-stdio proxy does (relay.go):
	// RelayAddedP50 = relay − direct − bare unary, the cost of the extra
	// process hop itself; McpdOverRelayP50 = mcpd − relay, mcpd's own code.
	RelayP50         float64 `json:"relay_p50_us"`
	RelayP99         float64 `json:"relay_p99_us"`
	RelayAddedP50    float64 `json:"relay_added_p50_us"`
	McpdOverRelayP50 float64 `json:"mcpd_over_relay_p50_us"`
	PayloadBytes     int     `json:"bare_payload_bytes"`
	// Fronts are the host-facing ways in (front.go).
	Fronts []frontCall `json:"fronts"`
}

// throughputRow is calls/s of concurrent apps on one shared child.
type throughputRow struct {
	Server      string  `json:"server"`
	Concurrency int     `json:"concurrency"`
	Direct      float64 `json:"direct_calls_per_s"`
	Mcpd        float64 `json:"mcpd_calls_per_s"`
	Ratio       float64 `json:"mcpd_over_direct"`
	// Relay is the least a gRPC-to-stdio proxy does (relay.go), with as
	// many connections as apps.
	Relay         float64 `json:"relay_calls_per_s"`
	RelayRatio    float64 `json:"relay_over_direct"`
	McpdOverRelay float64 `json:"mcpd_over_relay"`
	// McpdUnary is the same apps calling CallToolUnary, the path of a call
	// that asks for no progress.
	McpdUnary      float64 `json:"mcpd_unary_calls_per_s"`
	UnaryOverRelay float64 `json:"mcpd_unary_over_relay"`
	// Median latency of the calls under this load, µs, and mcpd − relay
	// (the median of each round's difference) for both paths.
	McpdP50           float64 `json:"mcpd_p50_us"`
	McpdUnaryP50      float64 `json:"mcpd_unary_p50_us"`
	RelayP50          float64 `json:"relay_p50_us"`
	McpdOverRelayP50  float64 `json:"mcpd_minus_relay_p50_us"`
	UnaryOverRelayP50 float64 `json:"mcpd_unary_minus_relay_p50_us"`
	// CPU time (utime+stime) per call under this load, µs (median of
	// rounds): of mcpd for its two paths, of the relay process for its own.
	McpdCPU      float64 `json:"mcpd_cpu_us_per_call"`
	McpdUnaryCPU float64 `json:"mcpd_unary_cpu_us_per_call"`
	RelayCPU     float64 `json:"relay_cpu_us_per_call"`
	// Fronts: each front door with c requests in flight (front.go).
	Fronts []frontRate `json:"fronts"`
}

// listRow is sequential tools/list latency.
type listRow struct {
	Server    string  `json:"server"`
	Cache     string  `json:"cache_status"`
	DirectP50 float64 `json:"direct_p50_us"`
	McpdP50   float64 `json:"mcpd_p50_us"`
	McpdP99   float64 `json:"mcpd_p99_us"`
	BareP50   float64 `json:"bare_grpc_p50_us"`
	Speedup   float64 `json:"direct_over_mcpd"`
	OverBare  float64 `json:"mcpd_over_bare"`
	// Ceiling is direct/bare: the most any answer over gRPC on this
	// socket could gain on the direct call, even one costing nothing.
	Ceiling   float64 `json:"direct_over_bare"`
	ListBytes int     `json:"list_bytes"`
	// McpdRate and BareRate are lists per second with 64 apps at once.
	McpdRate  float64 `json:"mcpd_64_apps_per_s"`
	BareRate  float64 `json:"bare_grpc_64_apps_per_s"`
	RateRatio float64 `json:"mcpd_over_bare_64_apps"`
	// Fronts are the host-facing ways in (front.go).
	Fronts []frontList `json:"fronts"`
}

// memoryRow compares N apps each running their own child with mcpd + one
// shared child.
type memoryRow struct {
	Apps        int     `json:"apps"`
	SeparateRSS int64   `json:"separate_rss_bytes"`
	SeparatePSS int64   `json:"separate_pss_bytes"`
	SharedRSS   int64   `json:"mcpd_plus_child_rss_bytes"`
	SharedPSS   int64   `json:"mcpd_plus_child_pss_bytes"`
	McpdRSS     int64   `json:"mcpd_alone_rss_bytes"`
	RSSRatio    float64 `json:"rss_ratio"`
	PSSRatio    float64 `json:"pss_ratio"`
}

// daemonMemory is mcpd's own footprint.
type daemonMemory struct {
	IdleRSS int64 `json:"idle_rss_bytes"`
	IdlePSS int64 `json:"idle_pss_bytes"`
	// IdleAnon is the anonymous part of IdleRSS (heap, stacks); the rest
	// is mcpd's binary and libraries as far as the page cache maps them,
	// which moves by MiBs with the page cache's state.
	IdleAnon    int64 `json:"idle_anon_bytes"`
	IdleServers int   `json:"idle_configured_servers"`
	LoadRSS     int64 `json:"under_load_rss_bytes"`
	LoadHWM     int64 `json:"under_load_peak_rss_bytes"`
	LoadApps    int   `json:"under_load_apps"`
}

// fanOutRow is notification delivery to subscribed apps: from the child
// stamping a resources/updated just before writing it to each app
// receiving it; the median over rounds of each round's percentiles over
// every (notification, app) pair.
type fanOutRow struct {
	Apps int     `json:"apps"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	// DirectP50/P99: one app with its own child, listening over stdio.
	DirectP50 float64 `json:"direct_1_app_p50_us"`
	DirectP99 float64 `json:"direct_1_app_p99_us"`
	// BareP50/P99: the same number of apps on a bare gRPC fan-out server
	// (no mcpd code), from the stamp before the unary call that fires it.
	BareP50 float64 `json:"bare_grpc_p50_us"`
	BareP99 float64 `json:"bare_grpc_p99_us"`
	// Notifications is how many touches were timed (each to every app).
	Notifications int `json:"notifications"`
}

// recoveryRow is the time until a subscription is live again after SIGKILL
// (medians over rounds, each a different server killed once). Every time
// is measured from the kill to the app receiving the event.
type recoveryRow struct {
	// Total: kill → the restarted event (the subscription was re-sent to
	// the new process and acknowledged).
	Total     float64 `json:"resubscribed_ms"`
	ColdStart float64 `json:"cold_start_ms"`
	// Added is Total minus ColdStart (per round, then the median).
	Added float64 `json:"added_ms"`
	// FirstUpdate: kill → an update triggered right after restarted.
	FirstUpdate float64 `json:"first_update_ms"`
	// The steps, from the lifecycle events the app receives: Detect is
	// kill → restarting (exit seen, restart scheduled); Backoff is
	// restarting → started (the supervisor's restart delay, plus the
	// spawn); Handshake is started → ready; Resubscribe is ready →
	// restarted (the subscription re-sent and acknowledged).
	Detect      float64 `json:"detect_ms"`
	Backoff     float64 `json:"backoff_and_spawn_ms"`
	Handshake   float64 `json:"handshake_ms"`
	Resubscribe float64 `json:"resubscribe_ms"`
	// McpdOwn is Detect + Resubscribe: what mcpd adds besides waiting out
	// the backoff and starting the child.
	McpdOwn float64 `json:"mcpd_own_ms"`
	Rounds  int     `json:"rounds"`
}

// startupRow is mcpd's own start.
type startupRow struct {
	ReadyMs float64 `json:"start_to_answering_ms"`
	Servers int     `json:"configured_servers"`
}

// lazyRow is the first call on a lazy server (spawn + negotiation) against
// a warm call, and the same server's direct cold start.
type lazyRow struct {
	Server      string  `json:"server"`
	FirstCallMs float64 `json:"first_call_ms"`
	WarmCallUs  float64 `json:"warm_call_us"`
	DirectCold  float64 `json:"direct_spawn_handshake_ms"`
}

// targetCheck is one benchmark target and whether this run met it.
type targetCheck struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Met    bool    `json:"met"`
}

// processCheck reports the final check that nothing was left running.
type processCheck struct {
	Started     int  `json:"started"`
	LeftRunning bool `json:"left_running"`
}

// scaleReport is the scale section's curves (scale*.go).
type scaleReport struct {
	Apps    []scaleAppsRow    `json:"apps"`
	Servers []scaleServersRow `json:"servers"`
	Subs    []scaleSubsRow    `json:"subscriptions"`
	Sizes   []scaleSizeRow    `json:"result_sizes"`
}
