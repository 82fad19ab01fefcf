package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// faceRateRow is the throughput of 16 hosts through the HTTP face
// against 16 apps through the gRPC door, in short bursts that alternate
// between the two, as faceDoorRow does for CPU.
type faceRateRow struct {
	Server  string  `json:"server"`
	Clients int     `json:"clients"` // hosts on the face, apps on the door
	Pairs   int     `json:"pairs"`
	BurstMs float64 `json:"burst_ms"`
	Face    float64 `json:"httpface_calls_per_s"`
	Door    float64 `json:"grpc_door_calls_per_s"`
	Ratio   float64 `json:"ratio"`     // of the sums: calls over time, each side
	P25     float64 `json:"ratio_p25"` // of the pairs' ratios
	P75     float64 `json:"ratio_p75"`
}

// faceRateClients is how many hosts, and apps, call at once.
const faceRateClients = 16

// faceRateBursts are how many pairs of bursts, of how long each, one
// face-against-door throughput is made of.
func (b *bench) faceRateBursts() (pairs int, burst time.Duration) {
	if b.o.smoke {
		return 4, 100 * time.Millisecond
	}
	return 20, 500 * time.Millisecond
}

// faceRate adds the face-against-door throughput row of server, whose
// gRPC door app i calls echo with door(i), when the HTTP face is among
// fronts.
func (b *bench) faceRate(ctx context.Context, server string, door func(i int) error, fronts []*front) error {
	hf := httpFace(fronts)
	if hf == nil {
		return nil
	}
	face := func(int) error { return hf.echo(ctx) }
	pairs, burst := b.faceRateBursts()
	type run struct {
		calls int
		took  time.Duration
	}
	measure := func(f func(i int) error) func() (run, error) {
		return func() (run, error) {
			all, took, err := parallelCalls(burst, faceRateClients, f)
			return run{len(all), took}, err
		}
	}
	faces, doors, err := alternate(pairs, measure(face), measure(door))
	if err != nil {
		return fmt.Errorf("httpface against the gRPC door, throughput: %w", err)
	}
	var fs, ds run
	var ratios []float64
	rate := func(r run) float64 { return ratio(float64(r.calls), r.took.Seconds()) }
	for i := range faces {
		fs = run{fs.calls + faces[i].calls, fs.took + faces[i].took}
		ds = run{ds.calls + doors[i].calls, ds.took + doors[i].took}
		if doors[i].calls > 0 {
			ratios = append(ratios, rate(faces[i])/rate(doors[i]))
		}
	}
	row := faceRateRow{Server: server, Clients: faceRateClients, Pairs: pairs, BurstMs: ms(burst),
		Face: rate(fs), Door: rate(ds)}
	row.Ratio = ratio(row.Face, row.Door)
	row.P25, row.P75 = quartiles(ratios)
	b.rep.FaceRate = append(b.rep.FaceRate, row)
	return nil
}

// printFaceRate prints the face-against-door throughput table.
func printFaceRate(w io.Writer, rows []faceRateRow) {
	var lines []string
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s\t%d\t%d × %.0f\t%.0f\t%.0f\t%.2fx\t%.2f–%.2f\t", r.Server, r.Clients, r.Pairs, r.BurstMs, r.Face, r.Door, r.Ratio, r.P25, r.P75))
	}
	printBursts(w, "tools/call echo, calls/s", "server\thosts, apps\tpairs × ms\thttpface\tgRPC door\thttpface/door\tp25–p75\t", lines) // facedoor.go
}
