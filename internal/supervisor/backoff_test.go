package supervisor

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		rand float64
		n    int
		want time.Duration
	}{
		{"first restarts at once", 0.5, 1, 0},
		{"second", 0.5, 2, 250 * ms},
		{"doubles", 0.5, 4, time.Second},
		{"capped", 0.5, 20, 30 * time.Second},
		{"jitter low", 0, 3, 400 * ms},
		{"jitter high", 0.999999, 3, 599999 * time.Microsecond},
		{"jitter never above max", 0.999999, 20, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backoff{min: 250 * ms, max: 30 * time.Second, rand: func() float64 { return tt.rand }}
			got := b.delay(tt.n)
			if diff := got - tt.want; diff < -time.Microsecond || diff > time.Microsecond {
				t.Fatalf("delay(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}
