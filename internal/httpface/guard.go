package httpface

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// codeForbidden is the JSON-RPC code of a refused HTTP request (in the
// range JSON-RPC leaves to implementations).
const codeForbidden = -32000

// forbid answers 403 with a JSON-RPC error response without an id, as the
// MCP transport allows for a refused Origin, and closes the connection.
func forbid(w http.ResponseWriter, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"error":   map[string]any{"code": codeForbidden, "message": "Forbidden: " + msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	w.Write(append(body, '\n'))
}

// loopbackHost reports whether host (without port) names this machine's
// loopback: "localhost" or a loopback IP literal, brackets allowed.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// hostAllowed checks a request's Host against a face listening on port (0:
// a unix socket, where any Host is fine): a loopback name with the
// listening port, so that a page whose name an attacker rebound to
// 127.0.0.1 is refused.
func hostAllowed(host string, port int) bool {
	if port == 0 {
		return true
	}
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: only the default one can be meant.
		return port == 80 && loopbackHost(host)
	}
	return loopbackHost(h) && p == strconv.Itoa(port)
}

// originAllowed checks a present Origin: http or https, a loopback name,
// and the listening port (any port on a unix socket). An Origin without a
// port is of the scheme's default one (80, 443): another site on this
// machine unless mcpd listens there.
func originAllowed(origin string, port int) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.User != nil {
		return false
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if !loopbackHost(u.Hostname()) {
		return false
	}
	p := u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return port == 0 || p == strconv.Itoa(port)
}
