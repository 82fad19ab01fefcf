package service

import "encoding/json"

// Servers lists the configured servers, as a face needs them: those of
// the call's profile, and that profile.
type Servers struct {
	Servers []ServerStatus
	// Profile is the profile the call was made under; nil without one.
	Profile *Profile
}

// ServerStatus is what a face knows of one configured server.
type ServerStatus struct {
	// Name is the server's key in the config's mcpServers.
	Name string
	// Disabled is the config's disabled: never started.
	Disabled bool
	// Era is "modern", "legacy" or empty before the first handshake.
	Era string
	// ServerInfo is the server's Implementation object, as it gave it;
	// empty before the first handshake.
	ServerInfo json.RawMessage
	// Capabilities is the server's capabilities object; empty before the
	// first handshake.
	Capabilities json.RawMessage
	// Instructions are the server's instructions, "" for none.
	Instructions string
}

// Profile is a profile of the config: which servers it serves and how a
// host serving several of them names tools and prompts.
type Profile struct {
	Name string
	// Prefix is "always" (server__name) or "on-collision".
	Prefix string
	// Servers are the servers it serves, sorted.
	Servers []string
}
