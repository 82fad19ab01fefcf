package bridge

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// mcpd serves "mcpdctl bridge" on a socket of its own, next to the API
// socket: mcpdctl writes one header line (RelayHeader), mcpd answers one
// (RelayAnswer), and from then on the connection carries the host's
// newline-delimited JSON-RPC as stdio does, which mcpd serves with this
// package's bridge in its own process. mcpdctl only relays bytes, so the
// host pays for no gRPC client. Besides MCP messages, mcpd writes the
// bridge's operator warnings on the connection, each a line starting with
// RelayWarning, which mcpdctl prints on stderr.

// RelayHeader is the bridge's command line, as mcpdctl sends it.
type RelayHeader struct {
	Names     []string `json:"names,omitempty"`     // servers to serve, in order
	All       bool     `json:"all,omitempty"`       // every enabled server (of the profile)
	Profile   string   `json:"profile,omitempty"`   // --profile; "" for none
	Prefix    string   `json:"prefix,omitempty"`    // --prefix: "always", "on-collision" or ""
	Root      string   `json:"root,omitempty"`      // --root, absolute; "" for none
	TimeoutMs int64    `json:"timeoutMs,omitempty"` // --timeout per forwarded request; 0: none
	MaxLine   int      `json:"maxLine,omitempty"`   // --max-line-size; 0: DefaultMaxLine
	Client    string   `json:"client,omitempty"`    // the relaying program's name…
	Version   string   `json:"version,omitempty"`   // …and version
	// Host is the host's own name, from the clientInfo of its first
	// message (HostName); "" when unknown. With the relaying process's
	// pid it is the app's identity for servers shared per client.
	Host string `json:"host,omitempty"`
}

// HostName is the clientInfo name a host's message line gives: an
// initialize's params.clientInfo, or a modern request's _meta clientInfo;
// "" for none.
func HostName(line []byte) string {
	var m struct {
		Params struct {
			ClientInfo struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	if n := m.Params.ClientInfo.Name; n != "" {
		return n
	}
	var ci struct {
		Name string `json:"name"`
	}
	if raw, ok := m.Params.Meta[jsonrpc.MetaClientInfo]; ok && json.Unmarshal(raw, &ci) == nil {
		return ci.Name
	}
	return ""
}

// RelayAnswer is mcpd's answer to the header: OK, or the error the bridge
// fails with, for mcpdctl to print.
type RelayAnswer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// BadHeader says mcpd could not read the header: mcpdctl then runs
	// its own bridge over the API socket, which says what is wrong, if
	// anything still is (an mcpd of another version, which knows not every
	// field of the header).
	BadHeader bool `json:"badHeader,omitempty"`
}

// RelayWarning starts a line of the bridge socket that is an operator
// warning rather than an MCP message (which always starts with '{').
const RelayWarning = '!'

// MaxRelayHeader bounds the header line, in bytes.
const MaxRelayHeader = 64 << 10

// RelaySocketPath is where mcpd serves the bridge for an API socket at
// apiSocket: beside it, "mcpd.sock" becoming "mcpd-bridge.sock".
func RelaySocketPath(apiSocket string) string {
	dir, base := filepath.Split(apiSocket)
	return filepath.Join(dir, strings.TrimSuffix(base, ".sock")+"-bridge.sock")
}
