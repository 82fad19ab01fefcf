// Package api is mcpd's gRPC door, a thin adapter on the in-process
// service (internal/core): the mcpd.v1.Mcpd service, each RPC's message
// turned into a core.Service call in internal/service's plain values and
// the answer back (a result's bytes passed through as views, not copies);
// the SO_PEERCRED transport credentials, which register each connection
// as an app of the service; the interceptors that charge the request
// memory budget, give each call its context from its connection and
// metadata and track it, with the service's own functions; and the one
// mapping from the service's errors to gRPC statuses. Nothing else in
// the daemon imports gRPC or the generated protos (internal/service's
// TestImportRules).
package api
