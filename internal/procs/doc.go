// Package procs makes sure that no process of a server outlives mcpd or its
// server: mcpd is a child subreaper, so orphaned descendants of a server are
// reparented to it and reaped here; each server runs in its own cgroup when
// one can be created (and is killed whole with cgroup.kill), else its
// descendants are tracked through /proc; and every running child is
// recorded in a directory next to the socket, so that the next mcpd kills
// what a SIGKILLed one left behind.
//
// A nil *Keeper is valid and does nothing but start commands: processes
// then have only their process group (internal/transport).
package procs
