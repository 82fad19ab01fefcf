package mcpdv1

// Request metadata keys of mcpd's API, as mcpd.proto describes them. The
// daemon (internal/api) reads them and its clients (internal/apiclient)
// send them; this is their one definition.
const (
	// MetadataClientName names the app making the calls, once per
	// connection (CallOptions.client overrides it per call).
	MetadataClientName = "mcpd-client-name"
	// MetadataClientVersion is the app's version text.
	MetadataClientVersion = "mcpd-client-version"
	// MetadataProfile picks the profile of the config the calls are made
	// under.
	MetadataProfile = "mcpd-profile"
	// MetadataRoot names the workspace root, an absolute directory, the
	// calls are made in (mcpdctl bridge --root DIR): mcpd runs the
	// instance of a server with share "root" for it.
	MetadataRoot = "mcpd-root"

	// MetadataDaemon is the trailer mcpd sets on every error status of its
	// own, so that a client tells mcpd's UNAVAILABLE (a server that is
	// down names it) from a connection to mcpd that failed.
	MetadataDaemon = "mcpd-daemon"
)
