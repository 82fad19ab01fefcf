package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// faceDoorRow is mcpd's CPU per operation through the HTTP face against
// the same operation through the gRPC door, measured in short bursts
// that alternate between the two: on a shared machine, load that comes
// and goes over seconds moves both alike, so their ratio holds where
// two separate figures do not.
type faceDoorRow struct {
	Server string  `json:"server"`
	Op     string  `json:"op"`
	Pairs  int     `json:"pairs"`
	Burst  int     `json:"calls_per_burst"`
	Face   float64 `json:"httpface_mcpd_cpu_us"`
	Door   float64 `json:"grpc_door_mcpd_cpu_us"`
	Ratio  float64 `json:"ratio"`     // of the sums: every call weighs the same
	P25    float64 `json:"ratio_p25"` // of the pairs' ratios: how much one pair says
	P75    float64 `json:"ratio_p75"`
}

// faceDoorBursts are how many pairs of bursts, of how many calls each,
// one face-against-door figure is made of.
func (b *bench) faceDoorBursts() (pairs, burst int) {
	if b.o.smoke {
		return 4, 50
	}
	return 40, 200
}

// faceDoor adds the face-against-door rows of server, whose gRPC door
// calls echo and list, when the HTTP face is among fronts.
func (b *bench) faceDoor(ctx context.Context, server string, mcpdPid int, echo, list func() error, fronts []*front) error {
	i := slices.IndexFunc(fronts, func(f *front) bool { return f.name == frontHTTPFace })
	if i < 0 {
		return nil
	}
	face := fronts[i]
	for _, op := range []struct {
		name       string
		face, door func() error
	}{
		{opEcho, func() error { return face.echo(ctx) }, echo},
		{opList, func() error { _, err := face.list(ctx); return err }, list},
	} {
		row, err := b.faceAgainstDoor(server, op.name, mcpdPid, op.face, op.door)
		if err != nil {
			return fmt.Errorf("httpface against the gRPC door, %s: %w", op.name, err)
		}
		b.rep.FaceDoor = append(b.rep.FaceDoor, row)
	}
	return nil
}

// faceAgainstDoor measures op through the face and through the door in
// alternating bursts, each pair starting with the other.
func (b *bench) faceAgainstDoor(server, op string, mcpdPid int, face, door func() error) (faceDoorRow, error) {
	pairs, burst := b.faceDoorBursts()
	var faceSum, doorSum time.Duration
	var ratios []float64
	for i := range pairs {
		measure := func(f func() error) (time.Duration, error) {
			_, perCall, err := cpuPerCall(burst, 0, mcpdPid, f)
			return perCall * time.Duration(burst), err // to the ns per call: the sums stay exact enough
		}
		first, second := face, door
		if i%2 == 1 {
			first, second = door, face
		}
		a, err := measure(first)
		if err != nil {
			return faceDoorRow{}, err
		}
		c, err := measure(second)
		if err != nil {
			return faceDoorRow{}, err
		}
		f, d := a, c
		if i%2 == 1 {
			f, d = c, a
		}
		faceSum, doorSum = faceSum+f, doorSum+d
		if d > 0 {
			ratios = append(ratios, float64(f)/float64(d))
		}
	}
	slices.Sort(ratios)
	calls := time.Duration(pairs * burst)
	row := faceDoorRow{Server: server, Op: op, Pairs: pairs, Burst: burst,
		Face: us(faceSum / calls), Door: us(doorSum / calls), Ratio: ratio(float64(faceSum), float64(doorSum))}
	if len(ratios) > 0 {
		row.P25, row.P75 = ratios[len(ratios)/4], ratios[len(ratios)*3/4]
	}
	return row, nil
}

// printFaceDoor prints the face-against-door table.
func printFaceDoor(w io.Writer, rows []faceDoorRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "the HTTP face against the gRPC door: mcpd's CPU per operation, µs, in alternating bursts (ratio of the sums; p25–p75 of the pairs' ratios)")
	tw := tabwriter.NewWriter(w, 4, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\top\tpairs × calls\thttpface\tgRPC door\thttpface/door\tp25–p75\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d × %d\t%.1f\t%.1f\t%.2fx\t%.2f–%.2f\t\n", r.Server, r.Op, r.Pairs, r.Burst, r.Face, r.Door, r.Ratio, r.P25, r.P75)
	}
	tw.Flush()
}
