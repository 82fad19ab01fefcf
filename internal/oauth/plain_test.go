package oauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// httptestPlain serves 404 for everything: no OAuth anywhere.
func httptestPlain(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}
