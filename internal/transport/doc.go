// Package transport owns one MCP server child process and its stdio: spawn in
// its own process group, newline-delimited JSON-RPC framing on stdout/stdin,
// a continuously drained stderr kept in a ring, and the MCP stdio stop
// sequence (close stdin, SIGTERM the group, SIGKILL the group).
//
// Goroutines: each Process owns exactly two internal goroutines, the stderr
// drain and the waiter. Both have ended when Done is closed. ReadMessage runs
// on the caller's goroutine (the session's reader); nothing else reads
// stdout.
package transport
