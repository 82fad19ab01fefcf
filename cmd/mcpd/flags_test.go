package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseFlagsSubscriptionQueue(t *testing.T) {
	f, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.queueEvents != 1024 || f.queueBytes != 8<<20 {
		t.Errorf("defaults = %d events / %d bytes, want 1024 / 8 MiB", f.queueEvents, f.queueBytes)
	}
	f, err = parseFlags([]string{"--subscription-queue-events", "16", "--subscription-queue-bytes", "4096"}, io.Discard)
	if err != nil || f.queueEvents != 16 || f.queueBytes != 4096 {
		t.Errorf("parseFlags = %+v, %v; want 16 events / 4096 bytes", f, err)
	}
	for _, bad := range [][]string{{"--subscription-queue-events", "0"}, {"--subscription-queue-bytes", "-1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("parseFlags(%v) = %v, want a must-be-positive error", bad, err)
		}
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("parseFlags accepted a positional argument")
	}
}
