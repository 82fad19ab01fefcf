package main

import (
	"testing"

	"go.uber.org/zap"
)

func TestStartGCPace(t *testing.T) {
	t.Setenv("GOGC", "200")
	if p := startGCPace(zap.NewNop()); p != nil {
		p.Stop()
		t.Error("with $GOGC set: a pacer was started")
	}
	t.Setenv("GOGC", "")
	p := startGCPace(zap.NewNop())
	if p == nil {
		t.Fatal("without $GOGC: no pacer")
	}
	p.Stop()
}
