package config

import "encoding/json"

// Values of the "share" key (Server.Share).
const (
	// ShareGlobal: one child serves every app (the default).
	ShareGlobal = "global"
	// ShareClient: one child per connected app identity.
	ShareClient = "client"
	// ShareRoot: one child per workspace root, started in that root.
	ShareRoot = "root"
)

// Keys of instance sharing.
const (
	keyShare        = "share"
	keyMaxInstances = "maxInstances"
)

var shares = []string{ShareGlobal, ShareClient, ShareRoot}

// shareKey reads "share" and "maxInstances" into s; it reports whether key
// was one of them.
func (p *parser) shareKey(s *Server, key string, raw json.RawMessage) bool {
	switch key {
	case keyShare:
		s.Share = p.enum(s.Name, key, raw, shares, ShareGlobal)
	case keyMaxInstances:
		s.MaxInstances = p.positiveInt(s.Name, key, raw)
	default:
		return false
	}
	return true
}

// checkShare reports the combinations of sharing keys that cannot work: a
// remote server is one connection to a service that holds its own
// per-user state, so mcpd has no process to run per app or per root; and
// maxInstances bounds instances, which a global server does not have.
func (p *parser) checkShare(s *Server, present map[string]bool) {
	shared := s.Share == ShareClient || s.Share == ShareRoot
	if shared && s.Remote != nil {
		p.fail(s.Name, keyShare, "%q is for a command server: a remote server (url) is one connection that mcpd does not start, so it cannot run one instance per %s; use %q", s.Share, shareUnit(s.Share), ShareGlobal)
	}
	if present[keyMaxInstances] && !shared && s.MaxInstances > 0 {
		p.fail(s.Name, keyMaxInstances, "applies only with %q set to %q or %q", keyShare, ShareClient, ShareRoot)
	}
}

// shareUnit names what one instance of share serves.
func shareUnit(share string) string {
	if share == ShareRoot {
		return "workspace root"
	}
	return "app"
}
