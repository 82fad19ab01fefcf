package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// scale is the scale section: how mcpd's cost grows with connected apps,
// configured servers, watched URIs and result size, each on a fresh
// daemon; then the SVG plots of the curves, when -plots names a directory.
func (b *bench) scale(ctx context.Context) error {
	curves := []func(context.Context) error{b.scaleApps, b.scaleServers, b.scaleSubs, b.scaleSize}
	for i, f := range curves { // in the order of scaleCurveNames
		if !b.o.scale.runs(scaleCurveNames[i]) {
			continue
		}
		if err := f(ctx); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if b.o.plots == "" {
		return nil
	}
	if err := os.MkdirAll(b.o.plots, 0o755); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	for name, svg := range scalePlots(&b.rep.Scale) { // svg.go
		if err := os.WriteFile(filepath.Join(b.o.plots, name), []byte(svg), 0o644); err != nil {
			return fmt.Errorf("plots: %w", err)
		}
	}
	return nil
}
