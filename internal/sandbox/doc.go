// Package sandbox confines one server's process tree on Linux without
// containers: Landlock rules for the filesystem (read and write path
// lists) and TCP (connect to listed ports only), no_new_privs, and an
// open-files rlimit, applied by mcpd re-executing itself as a small helper
// between fork and the server's exec; memory, pids and cpu limits are the
// cgroup's (internal/procs).
//
// The flow: config parses a server's "sandbox" into a Policy; when the
// server starts, Prepare turns the Policy into a Plan for that start (the
// preset's system and runtime paths, its state and temp dirs, what the
// kernel offers), and Plan.Wrap rewrites the command into the helper's.
// The helper is entered by calling RunIfHelper first thing in main (and in
// TestMain of packages whose tests start sandboxed servers): when the
// environment carries a plan, it applies it and execs the server, and
// never returns.
package sandbox
