package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// maxTapBody bounds the POST bodies a Tap reads.
const maxTapBody = 8 << 20

// Tap is a reverse proxy in front of an HTTP MCP server that records the
// JSON-RPC messages POSTed through it with the server's answer status: what
// the server heard, for one that logs nothing of it. Responses (SSE
// streams included) pass through unbuffered.
type Tap struct {
	// URL is the tap's base URL; paths are those of the server.
	URL string

	heard *record[Message]
	srv   *httptest.Server
	tr    *http.Transport
}

// tapKey carries a request's messages from the handler to ModifyResponse.
type tapKey struct{}

// NewTap starts a Tap in front of target (a base URL); it is closed when
// the test ends.
func NewTap(t testing.TB, target string) *Tap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &Tap{heard: newRecord[Message](), tr: &http.Transport{}}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport:     tap.tr,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			tap.record(resp.Request.Context(), resp.StatusCode)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			tap.record(r.Context(), http.StatusBadGateway)
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	tap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxTapBody))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r = r.WithContext(context.WithValue(r.Context(), tapKey{}, parseMessages(body)))
		}
		proxy.ServeHTTP(w, r)
	}))
	tap.URL = tap.srv.URL
	t.Cleanup(tap.close)
	return tap
}

// record adds the messages of the request of ctx, answered with status.
func (tap *Tap) record(ctx context.Context, status int) {
	msgs, _ := ctx.Value(tapKey{}).([]Message)
	for _, m := range msgs {
		m.Status = status
		tap.heard.add(m)
	}
}

// WaitMessage implements Ear.
func (tap *Tap) WaitMessage(t testing.TB, what string, match func(Message) bool) Message {
	t.Helper()
	return tap.heard.wait(t, what+" through the tap", match, nil, func() string { return joinLines(tap.heard.snapshot()) })
}

func (tap *Tap) close() {
	tap.srv.CloseClientConnections()
	tap.srv.Close()
	tap.tr.CloseIdleConnections()
}
