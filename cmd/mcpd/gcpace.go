package main

import (
	"os"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/gcpace"
)

// startGCPace lets mcpd's heap grow further between collections while they
// come many times a second (internal/gcpace), unless $GOGC sets the pace.
// Stop the returned pacer (nil-safe) when mcpd stops.
func startGCPace(log *zap.Logger) *gcpace.Pacer {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	return gcpace.Start(func(percent int) {
		log.Debug("garbage collector pace", zap.Int("gogc", percent))
	})
}
