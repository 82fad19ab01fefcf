// Package hosts knows the MCP hosts' config files: where each host keeps
// its servers, in which format and with which keys. It finds a user's
// hosts, reads their server entries, rewrites entries in place to reach
// mcpd (a format-preserving editor per format, so that comments, key
// order and every other setting stay byte for byte), writes atomically
// after a backup, and undoes it: byte for byte when the file is as it was
// left, entry by entry when the user changed it since.
//
// It knows nothing of mcpd's own config or of the daemon: mcpdctl's
// connect and disconnect verbs decide which mcpd server an entry becomes.
package hosts
