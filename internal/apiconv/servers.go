package apiconv

import (
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ServersOf is a ListServers answer as a face needs it.
func ServersOf(resp *mcpdv1.ListServersResponse) *service.Servers {
	out := &service.Servers{Servers: make([]service.ServerStatus, 0, len(resp.GetServers()))}
	for _, s := range resp.GetServers() {
		out.Servers = append(out.Servers, service.ServerStatus{
			Name:         s.GetName(),
			Disabled:     s.GetDisabled(),
			Era:          s.GetEra(),
			ServerInfo:   rawOrNil(s.GetServerInfoJson()),
			Capabilities: rawOrNil(s.GetCapabilitiesJson()),
			Instructions: s.GetInstructions(),
		})
	}
	if p := resp.GetProfile(); p != nil {
		out.Profile = &service.Profile{Name: p.GetName(), Prefix: p.GetPrefix(), Servers: p.GetServers()}
	}
	return out
}

// rawOrNil is s as JSON text, nil when empty.
func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
