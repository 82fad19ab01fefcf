package main

import (
	"sync"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/bridgeface"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/socket"
)

// bridgeFace serves "mcpdctl bridge" on its socket beside the API socket
// (internal/bridgeface); a nil one serves nothing.
type bridgeFace struct {
	face *bridgeface.Face
	log  *zap.Logger
	once sync.Once
}

// startBridgeFace serves the bridge socket for the API socket at
// apiSocket, unless on is false. A socket that cannot be bound is not
// fatal: mcpdctl bridge then runs its bridge itself, over the API socket.
func startBridgeFace(on bool, apiSocket string, srv *core.Service, be bridge.Backend, log *zap.Logger) *bridgeFace {
	path := bridge.RelaySocketPath(apiSocket)
	if !on {
		log.Info("bridge socket off (--bridge-socket=false): mcpdctl bridge uses the API socket")
		return nil
	}
	ln, err := socket.Listen(path)
	if err != nil {
		log.Warn("bridge socket off: mcpdctl bridge uses the API socket", zap.String("path", path), zap.Error(err))
		return nil
	}
	log.Info("serving mcpdctl bridge", zap.String("bridge_socket", path))
	return &bridgeFace{face: bridgeface.Serve(ln, bridgeface.Options{Logger: log, Server: srv, Backend: be, WantUID: -1}), log: log}
}

// close ends the face's sessions and removes its socket, once.
func (b *bridgeFace) close() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		if err := b.face.Close(); err != nil {
			b.log.Warn("bridge socket stopped with an error", zap.Error(err))
		}
	})
}
