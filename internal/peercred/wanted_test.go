package peercred

import (
	"os"
	"testing"
)

func TestWanted(t *testing.T) {
	if got := Wanted(-1); got != os.Geteuid() {
		t.Errorf("Wanted(-1) = %d, want the own uid %d", got, os.Geteuid())
	}
	if got := Wanted(1234); got != 1234 {
		t.Errorf("Wanted(1234) = %d", got)
	}
}
