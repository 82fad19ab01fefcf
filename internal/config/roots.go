package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// roots parses a server's "roots" key: a boolean, or an array of
// directories (absolute paths or file:// URIs, ${VAR} expanded) that mcpd
// answers the child's roots/list with when no host app answers it. An
// array turns the capability on, like true.
func (p *parser) roots(s *Server, server string, raw json.RawMessage) {
	if Kind(raw) != "array" {
		v := p.boolean(server, "roots", raw)
		s.Roots = &v
		return
	}
	elems, err := arrayElements(raw) // jsonscan.go
	if err != nil {
		p.fail(server, "roots", "%v", err)
		return
	}
	on := true
	s.Roots = &on
	s.RootPaths = make([]string, 0, len(elems))
	for i, e := range elems {
		key := fmt.Sprintf("roots[%d]", i)
		v, ok := p.str(server, key, e)
		if !ok {
			continue
		}
		x, ok := p.expand(server, key, v)
		if !ok {
			continue
		}
		if p.noExpand {
			// Disabled: its variables are not expanded, so "${HOME}/p"
			// cannot be checked for an absolute path until it is enabled.
			s.RootPaths = append(s.RootPaths, v)
			continue
		}
		if dir, ok := p.rootPath(server, key, v, x); ok {
			s.RootPaths = append(s.RootPaths, dir)
		}
	}
}

// rootPath turns one expanded roots entry x (written v) into a clean
// absolute path.
func (p *parser) rootPath(server, key, v, x string) (string, bool) {
	if strings.HasPrefix(x, "file:") {
		u, err := url.Parse(x)
		if err != nil || u.Opaque != "" || (u.Host != "" && u.Host != "localhost") {
			p.fail(server, key, "%q is not a file:///absolute/path URI", v)
			return "", false
		}
		x = u.Path
	}
	if !filepath.IsAbs(x) {
		p.fail(server, key, "%q is not an absolute path (write /full/path, ${HOME}/dir or file:///full/path)", v)
		return "", false
	}
	return filepath.Clean(x), true
}
