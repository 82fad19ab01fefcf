package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// checkFrontTargets compares the front doors with their targets: the stdio
// bridge's cached tools/list at least twice as fast as direct stdio, its
// CPU per call at most 100 µs, and its added latency per call no worse
// than the HTTP face's plus one process hop (relay − direct − bare). With
// the face off, the HTTP floor stands in for it, and the check says so.
// The HTTP face's own targets are against the floors (checkFaceTargets).
func (b *bench) checkFrontTargets() {
	r := &b.rep
	add := func(name, target string, v float64, unit string, met bool) {
		r.Targets = append(r.Targets, targetCheck{Name: name, Target: target, Value: v, Unit: unit, Met: met})
	}
	b.checkFaceTargets(add)
	for _, o := range r.Overhead {
		bridge, okB := findCall(o.Fronts, frontBridge)
		http, okH := findCall(o.Fronts, frontHTTPFace)
		which := "httpface"
		if !okH {
			http, okH = findCall(o.Fronts, frontHTTPFloor)
			which = "http floor, httpface off"
		}
		if okB && okH {
			limit := http.AddedP50 + o.RelayAddedP50
			add(fmt.Sprintf("bridge added p50 − (%s added + hop) (%s)", which, o.Server), "<= 0 us",
				bridge.AddedP50-limit, "us", bridge.AddedP50 <= limit)
		}
	}
	for _, l := range r.Lists {
		for _, f := range l.Fronts {
			if f.Name == frontBridge {
				add("tools/list direct/bridge ("+l.Server+")", ">= 2", f.Speedup, "x", f.Speedup >= 2)
			}
		}
	}
	for _, c := range r.CPU {
		if c.Path == frontBridge {
			add(fmt.Sprintf("bridge process CPU per call, %s (%s)", c.Op, c.Server), "<= 100 us", c.Front, "us", c.Front <= 100)
		}
	}
}

// checkFaceTargets compares mcpd's HTTP face (modern) with the bare HTTP
// floors: its added latency per tools/call at most 1.1× the relay's, its
// cached tools/list at most 1.2× the bare answer of the same list, and
// mcpd's CPU per call at most 1.2× the relay process's.
func (b *bench) checkFaceTargets(add func(name, target string, v float64, unit string, met bool)) {
	r := &b.rep
	for _, o := range r.Overhead {
		face, ok1 := findCall(o.Fronts, frontHTTPFace)
		floor, ok2 := findCall(o.Fronts, frontHTTPFloor)
		if ok1 && ok2 && floor.AddedP50 > 0 {
			v := face.AddedP50 / floor.AddedP50
			add("httpface added p50 / http floor added p50 ("+o.Server+")", "<= 1.1", v, "x", v <= 1.1)
		}
	}
	for _, l := range r.Lists {
		var face, floor float64
		for _, f := range l.Fronts {
			switch f.Name {
			case frontHTTPFace:
				face = f.P50
			case frontHTTPFloor:
				floor = f.P50
			}
		}
		if face > 0 && floor > 0 {
			add("tools/list httpface p50 / http floor p50 ("+l.Server+")", "<= 1.2", face/floor, "x", face/floor <= 1.2)
		}
	}
	floorCPU := map[string]float64{}
	for _, c := range r.CPU {
		if c.Path == frontHTTPFloor {
			floorCPU[c.Server+"\x00"+c.Op] = c.Front
		}
	}
	for _, c := range r.CPU {
		if fl := floorCPU[c.Server+"\x00"+c.Op]; c.Path == frontHTTPFace && c.Op == opEcho && fl > 0 {
			add("httpface mcpd CPU / http floor CPU per call, "+c.Op+" ("+c.Server+")", "<= 1.2", c.Mcpd/fl, "x", c.Mcpd/fl <= 1.2)
		}
	}
	b.checkFaceAgainstGRPC(add)
}

// checkFaceAgainstGRPC holds the HTTP face to the gRPC door, each in
// alternating bursts: mcpd's CPU per call and per cached list at most the
// gRPC door's (facedoor.go), and its throughput with 16 hosts at least
// the gRPC door's with 16 apps (facedoorrate.go).
func (b *bench) checkFaceAgainstGRPC(add func(name, target string, v float64, unit string, met bool)) {
	r := &b.rep
	for _, c := range r.FaceDoor { // facedoor.go
		add("httpface mcpd CPU / gRPC door mcpd CPU, "+c.Op+" ("+c.Server+")", "<= 1.0", c.Ratio, "x", c.Ratio <= 1)
	}
	for _, t := range r.FaceRate { // facedoorrate.go
		add(fmt.Sprintf("httpface / gRPC door throughput (%s, %d hosts)", t.Server, t.Clients), ">= 1.0", t.Ratio, "x", t.Ratio >= 1)
	}
}

func findCall(rows []frontCall, name string) (frontCall, bool) {
	for _, f := range rows {
		if f.Name == name {
			return f, true
		}
	}
	return frontCall{}, false
}

// printFronts prints the front doors' part of sections 1-3 and the CPU
// section.
func printFronts(w io.Writer, tw *tabwriter.Writer, r *report) {
	fmt.Fprintf(w, "3b. host front doors: stdio bridge, bare HTTP floors, mcpd's HTTP face (httpface: %s)\n", r.HTTPFace)
	fmt.Fprintln(w, "tools/call echo, sequential, µs; added = front − direct (median of per-round differences); hop = relay − direct − bare")
	fmt.Fprintln(tw, "server\tfront\tp50\tp99\tadded p50\tdirect p50\thop\t")
	for _, o := range r.Overhead {
		for _, f := range o.Fronts {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", o.Server, f.Name, f.P50, f.P99, f.AddedP50, o.DirectP50, o.RelayAddedP50)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "throughput, calls/s (the bridge: one host pipe with that many requests in flight)")
	fmt.Fprintln(tw, "server\tin flight\tfront\tcalls/s\tfront/direct\t")
	for _, t := range r.Throughput {
		for _, f := range t.Fronts {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.2fx\t\n", t.Server, t.Concurrency, f.Name, f.Rate, f.Ratio)
		}
	}
	tw.Flush()
	printFaceRate(w, r.FaceRate)
	fmt.Fprintln(w, "tools/list, sequential, µs (mcpd: cached)")
	fmt.Fprintln(tw, "server\tfront\tbytes\tp50\tp99\tdirect p50\tdirect/front\t")
	for _, l := range r.Lists {
		for _, f := range l.Fronts {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.2fx\t\n", l.Server, f.Name, f.Bytes, f.P50, f.P99, l.DirectP50, f.Speedup)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "CPU per call, µs (the process's CPU time over sequential calls, median of interleaved rounds)")
	if len(r.CPU) == 0 {
		fmt.Fprintf(w, "%s\n\n", r.CPUNote)
		return
	}
	fmt.Fprintln(tw, "server\tpath\top\tcalls\tfront process\tmcpd\t")
	for _, c := range r.CPU {
		front, mcpd := "-", fmt.Sprintf("%.1f", c.Mcpd)
		if c.Path == frontBridge || c.Path == frontHTTPFloor || c.Path == frontGRPCFloor {
			front = fmt.Sprintf("%.1f", c.Front)
		}
		if c.Path == frontHTTPFloor {
			mcpd = "-" // mcpd plays no part
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t\n", c.Server, c.Path, c.Op, c.Calls, front, mcpd)
	}
	tw.Flush()
	printFaceDoor(w, r.FaceDoor)
	fmt.Fprintln(w, "mcpd's CPU per operation against the least process doing it, µs (median of interleaved rounds)")
	fmt.Fprintln(tw, "server	op	mcpd	baseline	baseline CPU	mcpd/baseline	")
	for _, c := range r.CPURatios {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%.1f\t%.2fx\t\n", c.Server, c.Op, c.Mcpd, c.Baseline, c.Base, c.Ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
