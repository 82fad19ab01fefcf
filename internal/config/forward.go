package config

import "encoding/json"

// forward parses a server's "sampling" or "elicitation" key: a
// boolean saying whether the child's requests of that kind are forwarded
// to a host app.
func (p *parser) forward(s *Server, server, key string, raw json.RawMessage) {
	v := p.boolean(server, key, raw)
	switch key {
	case "sampling":
		s.Sampling = &v
	case "elicitation":
		s.Elicitation = &v
	}
}
