package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// openMcpd is a fake mcpd whose HTTP face is at url ("" when off).
type openMcpd struct {
	fakeMcpd
	url string
}

func (f *openMcpd) GetStatus(context.Context, *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	h := &mcpdv1.HttpStatus{Listen: "off", OffReason: "disabled (--http-listen off)"}
	if f.url != "" {
		h = &mcpdv1.HttpStatus{Listen: strings.TrimPrefix(f.url, "http://"), Urls: []string{f.url + "/mcp"}}
	}
	return &mcpdv1.GetStatusResponse{Http: h}, nil
}

// TestOpen: open prints the dashboard's URL (no display here, so it only
// prints it), and says why when the face or the dashboard is off.
func TestOpen(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	on := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/dashboard/api/ping" {
			http.NotFound(w, r)
		}
	}))
	defer on.Close()
	off := httptest.NewServer(http.NotFoundHandler())
	defer off.Close()
	tests := []struct {
		name, url, stdout, stderr string
		code                      int
	}{
		{"on", on.URL, on.URL + "/\n", "No display here", 0},
		{"face off", "", "", "HTTP face, which is off: disabled (--http-listen off)", 1},
		{"dashboard off", off.URL, "", `the dashboard is off ("dashboard": false`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sock := mcpdtest.Serve(t, &openMcpd{url: tt.url})
			r := mcpdctl(t, "--socket", sock, "open")
			if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
				t.Fatalf("open: exit %d stdout %q stderr %q, want %d %q and %q", r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
