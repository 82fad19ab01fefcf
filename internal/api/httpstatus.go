package api

import (
	"net/url"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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
func (s *Server) SetHTTPState(st HTTPState) {
	s.mu.Lock()
	s.http = st
	s.mu.Unlock()
}

// httpStatus is the HTTP face's entry of GetStatus, with the aggregate
// endpoint first, then one per configured server; nil when it was never
// set up.
func (s *Server) httpStatus() *mcpdv1.HttpStatus {
	s.mu.Lock()
	st := s.http
	s.mu.Unlock()
	if st == (HTTPState{}) {
		return nil
	}
	out := &mcpdv1.HttpStatus{Listen: st.Listen, OffReason: st.OffReason}
	if st.BaseURL == "" {
		return out
	}
	out.Urls = append(out.Urls, st.BaseURL+"/mcp")
	for _, name := range s.sup.Names() {
		out.Urls = append(out.Urls, st.BaseURL+"/servers/"+url.PathEscape(name)+"/mcp")
	}
	for _, name := range s.profileSet().Names() {
		out.Urls = append(out.Urls, st.BaseURL+"/profiles/"+url.PathEscape(name)+"/mcp")
	}
	return out
}
