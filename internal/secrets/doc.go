// Package secrets stores the values that the config names as
// ${secret:NAME}: in the desktop's Secret Service (org.freedesktop.secrets
// on the D-Bus session bus: GNOME Keyring, KWallet, KeePassXC), or, where
// there is no session bus or no Secret Service, in a 0600 file under mcpd's
// state directory.
//
// An item in the Secret Service has exactly the attributes service=mcpd and
// name=NAME, so other tools find it:
//
//	secret-tool lookup service mcpd name NAME
//
// Beside the named secrets, mcpd keeps items of its own in the Secret
// Service only (GetItem, SetItem): one per kind, with the attributes
// service=mcpd and kind=KIND and no name, which List skips (the OAuth
// tokens, kind=oauth).
//
// The package talks to the Secret Service with godbus directly rather than
// through a keyring wrapper: the wrappers fix the attribute set (service,
// username), cannot list items, and unlock with a prompt unconditionally,
// which would block the daemon.
//
// Values never appear in errors: they name the secret and the backend only.
package secrets
