package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestScaleFlags(t *testing.T) {
	o, err := parseOptions([]string{"-scale-curves", "servers,apps", "-scale-apps", "100, 1000", "-scale-servers", "500"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.scale.runs("servers") || !o.scale.runs("apps") || o.scale.runs("size") || o.scale.runs("subscriptions") {
		t.Errorf("curves = %v", o.scale.curves)
	}
	if !slices.Equal(o.scale.apps, []int{100, 1000}) || !slices.Equal(o.scale.servers, []int{500}) {
		t.Errorf("points = %v, %v", o.scale.apps, o.scale.servers)
	}
	b := &bench{o: o}
	if counts, running := b.scaleServerCounts(); !slices.Equal(counts, []int{500}) || running != 50 {
		t.Errorf("server counts = %v, %d running", counts, running)
	}
	if got := b.scaleAppCounts(); !slices.Equal(got, []int{100, 1000}) {
		t.Errorf("app counts = %v", got)
	}

	o, err = parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.scale.runs("size") || o.scale.apps != nil || o.scale.servers != nil {
		t.Errorf("defaults: %+v", o.scale)
	}
	for _, bad := range [][]string{{"-scale-curves", "apps,nope"}, {"-scale-apps", "0"}, {"-scale-servers", "ten"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: err = %v", bad, err)
		}
	}
}

// The apps curve fans out enough notifications at small counts for the
// CPU per delivery to be above /proc's 10 ms resolution.
func TestScaleTouches(t *testing.T) {
	b := &bench{o: &options{}}
	for n, want := range map[int]int{1: 1000, 10: 400, 100: 50, 1000: 40} {
		if got := b.scaleTouches(n); got != want {
			t.Errorf("scaleTouches(%d) = %d, want %d", n, got, want)
		}
	}
	b.o.smoke = true
	if got := b.scaleTouches(10); got != 20 {
		t.Errorf("smoke: scaleTouches(10) = %d, want 20", got)
	}
}

func TestFanOutFloorRatios(t *testing.T) {
	rows := []scaleAppsRow{
		{Apps: 10, CPUPerDelivery: 40, BareCPUPerDelivery: 30},
		{Apps: 100, P99: 10_000, BareP99: 8_000},
		{Apps: 1000, P99: 150_000, BareP99: 120_000, CPUPerDelivery: 50, BareCPUPerDelivery: 45},
	}
	got := fanOutFloorRatios(rows)
	for _, want := range []string{"p99 /100 apps 15.0x (15.0x)", "CPU per delivery /10 apps 1.25x (1.50x)"} {
		if !strings.Contains(got, want) {
			t.Errorf("fanOutFloorRatios = %q, want it to contain %q", got, want)
		}
	}
	if got := fanOutFloorRatios(rows[:2]); got != "" {
		t.Errorf("without 1000 apps: %q", got)
	}
}
