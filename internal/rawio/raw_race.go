//go:build race || msan || asan

package rawio

const raceEnabled = true
