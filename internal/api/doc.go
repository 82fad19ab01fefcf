// Package api owns mcpd's gRPC surface: the Unix-socket listener (directory
// and socket permissions, stale-socket probe, systemd socket activation), the
// SO_PEERCRED transport credentials, the mcpd.v1.Mcpd service implemented on
// top of the supervisor, proto↔domain conversion, and the one mapping from
// domain errors to gRPC status codes.
//
// It is the only package that imports gRPC or the generated protos; the
// domain packages below it never see either.
package api
