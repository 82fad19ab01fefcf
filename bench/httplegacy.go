package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// newLegacyHTTPClient is a legacy-era host on Streamable HTTP: it sends
// initialize once, keeps the Mcp-Session-Id the server answers with, sends
// notifications/initialized, and then makes every request in that session.
func newLegacyHTTPClient(ctx context.Context, url string, conns int) (*httpClient, error) {
	c := newHTTPClient(url, conns)
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + jsonrpc.LegacyVersion +
		`","capabilities":{},"clientInfo":{"name":"mcpd-bench","version":"1"}}}`)
	resp, err := c.post(ctx, init, "")
	if err != nil {
		c.close()
		return nil, err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	env, err := readAnswer(resp, 0)
	drain(resp)
	switch {
	case err != nil:
		err = fmt.Errorf("initialize at %s: %w", url, err)
	case env.Error != nil:
		err = fmt.Errorf("initialize at %s: %w", url, env.Error)
	case sid == "":
		err = fmt.Errorf("initialize at %s: no Mcp-Session-Id in the answer", url)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	c.session = sid
	resp, err = c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), sid)
	if err != nil {
		c.close()
		return nil, err
	}
	drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		c.close()
		return nil, fmt.Errorf("notifications/initialized at %s: HTTP %s, want 202", url, resp.Status)
	}
	return c, nil
}

// post sends body as a legacy POST in session sid ("" for none).
func (c *httpClient) post(ctx context.Context, body []byte, sid string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", jsonrpc.LegacyVersion)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", c.url, err)
	}
	return resp, nil
}

// drain reads the rest of resp's body and closes it, so that the
// connection is reused.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
