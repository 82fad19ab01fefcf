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
	face := httpFace(fronts)
	if face == nil {
		return nil
	}
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

// httpFace is the HTTP face among fronts; nil when it is off.
func httpFace(fronts []*front) *front {
	i := slices.IndexFunc(fronts, func(f *front) bool { return f.name == frontHTTPFace })
	if i < 0 {
		return nil
	}
	return fronts[i]
}

// faceAgainstDoor measures op through the face and through the door in
// alternating bursts.
func (b *bench) faceAgainstDoor(server, op string, mcpdPid int, face, door func() error) (faceDoorRow, error) {
	pairs, burst := b.faceDoorBursts()
	measure := func(f func() error) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			_, perCall, err := cpuPerCall(burst, 0, mcpdPid, f)
			return perCall * time.Duration(burst), err // to the ns per call: the sums stay exact enough
		}
	}
	faces, doors, err := alternate(pairs, measure(face), measure(door))
	if err != nil {
		return faceDoorRow{}, err
	}
	var faceSum, doorSum time.Duration
	var ratios []float64
	for i := range faces {
		faceSum, doorSum = faceSum+faces[i], doorSum+doors[i]
		if doors[i] > 0 {
			ratios = append(ratios, float64(faces[i])/float64(doors[i]))
		}
	}
	calls := time.Duration(pairs * burst)
	row := faceDoorRow{Server: server, Op: op, Pairs: pairs, Burst: burst,
		Face: us(faceSum / calls), Door: us(doorSum / calls), Ratio: ratio(float64(faceSum), float64(doorSum))}
	row.P25, row.P75 = quartiles(ratios)
	return row, nil
}

// alternate runs pairs pairs of bursts, face and door, each pair starting
// with the other, and returns what each burst measured.
func alternate[T any](pairs int, face, door func() (T, error)) (faces, doors []T, err error) {
	for i := range pairs {
		first, second := face, door
		if i%2 == 1 {
			first, second = door, face
		}
		a, err := first()
		if err != nil {
			return nil, nil, err
		}
		c, err := second()
		if err != nil {
			return nil, nil, err
		}
		if i%2 == 1 {
			a, c = c, a
		}
		faces, doors = append(faces, a), append(doors, c)
	}
	return faces, doors, nil
}

// quartiles returns p25 and p75 of the pairs' ratios (sorting them).
func quartiles(ratios []float64) (p25, p75 float64) {
	if len(ratios) == 0 {
		return 0, 0
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/4], ratios[len(ratios)*3/4]
}

// printFaceDoor prints the face-against-door table.
func printFaceDoor(w io.Writer, rows []faceDoorRow) {
	var lines []string
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s\t%s\t%d × %d\t%.1f\t%.1f\t%.2fx\t%.2f–%.2f\t", r.Server, r.Op, r.Pairs, r.Burst, r.Face, r.Door, r.Ratio, r.P25, r.P75))
	}
	printBursts(w, "mcpd's CPU per operation, µs", "server\top\tpairs × calls\thttpface\tgRPC door\thttpface/door\tp25–p75\t", lines)
}

// printBursts prints a face-against-door table of lines under what it
// measures and header; nothing without lines.
func printBursts(w io.Writer, what, header string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "the HTTP face against the gRPC door: %s, in alternating bursts (ratio of the sums; p25–p75 of the pairs' ratios)\n", what)
	tw := tabwriter.NewWriter(w, 4, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, l := range lines {
		fmt.Fprintln(tw, l)
	}
	tw.Flush()
}
