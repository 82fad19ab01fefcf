// Package supervisor owns the lifecycle of the configured MCP servers:
// desired versus actual state, lazy start, restart with backoff, crash-loop
// bounds, and the routing of app requests to each server's live session.
//
// Each server is its own object whose state is owned by one goroutine (its
// loop, see server.go); API calls send it commands with reply channels. A
// short mutex per server guards only the status snapshot, and no callback
// (events, notifications) is ever called while a lock is held.
package supervisor
