package core

import (
	"net/url"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// HTTPState is what GetStatus reports of mcpd's Streamable HTTP face.
type HTTPState struct {
	// Listen is the configured address, "off" when disabled.
	Listen string
	// BaseURL is where the face serves ("http://127.0.0.1:6273"), empty
	// when it does not serve.
	BaseURL string
	// OffReason says why it does not serve; empty when it serves.
	OffReason string
}

// SetHTTPState sets what GetStatus reports of the HTTP face.
func (s *Service) SetHTTPState(st HTTPState) {
	s.mu.Lock()
	s.http = st
	s.mu.Unlock()
}

// httpStatus is the HTTP face's status, with the aggregate endpoint
// first, then one per configured server; zero when it was never set up.
func (s *Service) httpStatus() service.HTTPStatus {
	s.mu.Lock()
	st := s.http
	s.mu.Unlock()
	if st == (HTTPState{}) {
		return service.HTTPStatus{}
	}
	out := service.HTTPStatus{Listen: st.Listen, OffReason: st.OffReason}
	if st.BaseURL == "" {
		return out
	}
	out.URLs = append(out.URLs, st.BaseURL+"/mcp")
	for _, name := range s.sup.Names() {
		out.URLs = append(out.URLs, st.BaseURL+"/servers/"+url.PathEscape(name)+"/mcp")
	}
	for _, name := range s.profileSet().Names() {
		out.URLs = append(out.URLs, st.BaseURL+"/profiles/"+url.PathEscape(name)+"/mcp")
	}
	return out
}
