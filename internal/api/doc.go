// Package api owns mcpd's service and its gRPC surface: the Unix-socket
// listener (directory and socket permissions, stale-socket probe, systemd
// socket activation), the SO_PEERCRED transport credentials, the
// mcpd.v1.Mcpd service implemented on top of the supervisor, proto↔domain
// conversion, the one mapping from domain errors to the service's classed
// errors (service.Error) and the one from those to gRPC statuses.
//
// The daemon's own faces call the service in process through LocalApp,
// whose call path takes internal/service's plain Go values: the request
// memory budget, call tracking, validation and the profile gate are the
// same functions the gRPC handlers and interceptors run. The domain
// packages below api never see gRPC or the generated protos
// (internal/service's TestImportRules).
package api
