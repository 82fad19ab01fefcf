package api

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// An app closing its connection with a stream open is ordinary: gRPC's
// warning about it goes to debug; other warnings stay warnings.
func TestGRPCWarningOfAnAppGoneIsDebug(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := &zapGRPCLogger{log: zap.New(core)}
	l.Warningf("grpc: Server.processRPC failed to write status: %v", `connection error: desc = "transport is closing"`)
	l.Warning("grpc: Server.Serve failed to create ServerTransport: bad handshake")
	entries := logs.All()
	if len(entries) != 2 || entries[0].Level != zapcore.DebugLevel || entries[1].Level != zapcore.WarnLevel {
		t.Fatalf("levels: %+v", entries)
	}
}
