package service

// Servers lists the configured servers, as a face needs them: those of
// the call's profile (ServerStatus with its name, disabled, era,
// serverInfo, capabilities and instructions), and that profile.
type Servers struct {
	Servers []ServerStatus
	// Profile is the profile the call was made under; nil without one.
	Profile *Profile
}
