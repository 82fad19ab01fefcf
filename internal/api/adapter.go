package api

import (
	"github.com/mcpd-dev/mcpd/internal/core"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Server is the gRPC adapter: the mcpd.v1.Mcpd service on the in-process
// service (core.Service), translating each request from protocol buffers
// to the service's plain values and its answer back. Its methods are safe
// for concurrent use.
type Server struct {
	mcpdv1.UnimplementedMcpdServer

	svc *core.Service
}

var _ mcpdv1.McpdServer = (*Server)(nil)
