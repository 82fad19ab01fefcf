package importer

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// hostHTTPTypes are the "type" values hosts write for Streamable HTTP
// (VS Code and Claude Code "http", Cline "streamableHttp", others
// "streamable-http"); "sse" is the 2024-11-05 transport.
var hostHTTPTypes = []string{"http", "streamable-http", "streamableHttp", "streamable_http"}

// remoteSkip says why a remote server of a host cannot be imported; ""
// when it can.
func remoteSkip(hs hostServer) string {
	t := hs.Type
	switch {
	case hs.URL == "":
		return fmt.Sprintf("it is a remote server (%s) without a url", hs.Remote)
	case hs.Command != "":
		return "it has both a command and a url"
	case t != "" && t != "sse" && !contains(hostHTTPTypes, t):
		return fmt.Sprintf("its type %q is not one mcpd knows (http, sse)", t)
	}
	u, err := url.Parse(hs.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && !strings.HasPrefix(hs.URL, "${")) {
		return "its url is not an http:// or https:// URL"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// convertRemote turns a host's remote server into an mcpd one: its url
// (Windsurf's serverUrl too), type and headers, with host variables
// converted. A server without a type whose URL ends in /sse is taken for
// the 2024-11-05 transport, as the hosts that guess do.
func (im *importer) convertRemote(m serverMap, name string, hs hostServer) Server {
	conv := func(key, v string) string { return im.convVars(m, name, key, v) }
	s := Server{URL: conv("url", hs.URL), Disabled: hs.Disabled}
	switch {
	case hs.Type == "sse":
		s.Type = "sse"
	case hs.Type == "" && strings.HasSuffix(strings.SplitN(hs.URL, "?", 2)[0], "/sse"):
		s.Type = "sse"
		im.notef("%s: imported with \"type\": \"sse\" (the 2024-11-05 HTTP+SSE transport): its url ends in /sse; remove the type if it serves Streamable HTTP", serverRef(m, name))
	}
	if len(hs.Headers) > 0 {
		keys := make([]string, 0, len(hs.Headers))
		for k := range hs.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys) // notes in a stable order
		s.Headers = map[string]string{}
		for _, k := range keys {
			s.Headers[k] = conv("headers."+k, hs.Headers[k])
		}
	}
	return s
}

// RemoteRef is a URL for messages, without what may be a credential.
func RemoteRef(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
