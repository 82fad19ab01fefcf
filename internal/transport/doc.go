// Package transport owns one MCP server child process and its stdio: spawn in
// its own process group, newline-delimited JSON-RPC framing on stdout/stdin,
// a continuously drained stderr kept in a ring, and the MCP stdio stop
// sequence (close stdin, SIGTERM the group, SIGKILL the group).
//
// Goroutines: each Process owns two internal goroutines, the stderr drain
// and the waiter, and, only while a write gave up on a full stdin pipe, a
// third that finishes the half-written message or watches the pipe until it
// has room or the child is found hung (write.go). All have ended when Done
// is closed. ReadMessage runs on the caller's goroutine (the session's
// reader); nothing else reads stdout. WriteMessage runs on the caller's
// goroutine and returns when its ctx ends.
package transport
