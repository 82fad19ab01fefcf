package procs

// Memory is the resident memory of one child's processes: the child, its
// descendants and the rest of its process group.
type Memory struct {
	// Procs is how many processes were measured.
	Procs int
	// RSS is the sum of their resident set sizes, in bytes. Pages two of
	// them share count twice.
	RSS int64
	// PSS is the sum of their proportional set sizes (smaps_rollup), in
	// bytes: each shared page is split among the processes mapping it.
	// It is meaningful only when PSSKnown.
	PSS int64
	// PSSKnown reports whether the PSS of every measured process was read.
	PSSKnown bool
}

// Add returns the sum of m and o; the sum's PSS is known only when both are.
func (m Memory) Add(o Memory) Memory {
	if m.Procs == 0 {
		return o
	}
	if o.Procs == 0 {
		return m
	}
	return Memory{Procs: m.Procs + o.Procs, RSS: m.RSS + o.RSS, PSS: m.PSS + o.PSS, PSSKnown: m.PSSKnown && o.PSSKnown}
}
