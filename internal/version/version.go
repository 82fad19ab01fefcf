// Package version holds the build version of mcpd and mcpdctl, set at link
// time with -ldflags "-X github.com/mcpd-dev/mcpd/internal/version.Version=...".
package version

// Version is the release version; "dev" for builds without ldflags.
var Version = "dev"
