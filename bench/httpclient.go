package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// httpClient is a host on Streamable HTTP, by default in the modern era
// (stateless): each request is one POST to url carrying the per-request
// _meta envelope and the required headers, accepting a JSON or an SSE
// answer. It drives the HTTP floors and mcpd's own HTTP face. A legacy
// client (newLegacyHTTPClient) initialized a session once and sends its
// Mcp-Session-Id on every request instead.
type httpClient struct {
	url     string
	hc      *http.Client
	next    atomic.Int64
	session string // the legacy session's id; "" for a modern client
}

// newHTTPClient is a client for the MCP endpoint url; conns is how many
// connections it keeps open for concurrent requests.
func newHTTPClient(url string, conns int) *httpClient {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &httpClient{url: url, hc: &http.Client{Transport: tr}}
}

// close ends a legacy client's session (DELETE) and closes the idle
// connections.
func (c *httpClient) close() {
	if c.session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil); err == nil {
			req.Header.Set("Mcp-Session-Id", c.session)
			if resp, err := c.hc.Do(req); err == nil {
				drain(resp)
			}
		}
	}
	c.hc.CloseIdleConnections()
}

// envelopeMeta is the _meta of every request: the modern envelope.
var envelopeMeta = `"_meta":{"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `","` +
	jsonrpc.MetaClientCapabilities + `":{},"` + jsonrpc.MetaClientInfo + `":{"name":"mcpd-bench","version":"1"}}`

// withEnvelope returns params (a JSON object without _meta, or nil) with
// the envelope as its first member.
func withEnvelope(params json.RawMessage) []byte {
	out := []byte("{" + envelopeMeta)
	if inner := bytes.TrimSpace(params); len(inner) > 2 {
		out = append(append(out, ','), inner[1:len(inner)-1]...)
	}
	return append(out, '}')
}

// call sends one request and returns its result; name is the Mcp-Name
// header (tools/call, prompts/get, resources/read), "" for none. params
// must already carry the envelope (withEnvelope).
func (c *httpClient) call(ctx context.Context, method, name string, params []byte) (json.RawMessage, error) {
	id := c.next.Add(1)
	body := make([]byte, 0, len(params)+64)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":`...)
	body = strconv.AppendQuote(body, method)
	body = append(body, `,"params":`...)
	body = append(append(body, params...), '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		h.Set("MCP-Protocol-Version", jsonrpc.LegacyVersion)
		h.Set("Mcp-Session-Id", c.session)
	} else {
		h.Set("MCP-Protocol-Version", jsonrpc.ModernVersion)
		h.Set("Mcp-Method", method)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", c.url, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
		resp.Body.Close()
	}()
	env, err := readAnswer(resp, id)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", method, c.url, err)
	}
	if env.Error != nil {
		return nil, fmt.Errorf("%s at %s: %w", method, c.url, env.Error)
	}
	return env.Result, nil
}

// readAnswer reads the response to request id from a JSON or SSE answer.
func readAnswer(resp *http.Response, id int64) (jsonrpc.Envelope, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return jsonrpc.Envelope{}, fmt.Errorf("HTTP %s: %s", resp.Status, b)
	}
	want := strconv.FormatInt(id, 10)
	switch ct {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return jsonrpc.Envelope{}, err
		}
		env, err := jsonrpc.DecodeEnvelope(b)
		if err == nil && string(env.ID) != want {
			err = fmt.Errorf("answer has id %s, want %s", env.ID, want)
		}
		return env, err
	case "text/event-stream":
		return readSSE(resp.Body, want)
	}
	return jsonrpc.Envelope{}, fmt.Errorf("unexpected Content-Type %q", ct)
}

// readSSE reads events until the one whose data is the response with id
// want; notifications before it are skipped.
func readSSE(r io.Reader, want string) (jsonrpc.Envelope, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			rest, rerr := br.ReadBytes('\n')
			line, err = append(bytes.Clone(line), rest...), rerr
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0 && len(data) > 0: // end of an event
			env, derr := jsonrpc.DecodeEnvelope(data)
			if derr == nil && string(env.ID) == want && (env.Result != nil || env.Error != nil) {
				return env, nil
			}
			data = data[:0]
		case bytes.HasPrefix(trimmed, []byte("data:")):
			v := bytes.TrimPrefix(trimmed[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil {
			return jsonrpc.Envelope{}, fmt.Errorf("SSE stream ended before the response: %w", err)
		}
	}
}

// httpEchoParams are the params of an echo call over HTTP.
var httpEchoParams = withEnvelope(echoParams)

// httpListParams are the params of a list request over HTTP.
var httpListParams = withEnvelope(nil)

// echo calls the echo tool and checks the text came back.
func (c *httpClient) echo(ctx context.Context, server string) error {
	params := httpEchoParams
	if c.session != "" {
		params = echoParams
	}
	res, err := c.call(ctx, "tools/call", "echo", params)
	if err != nil {
		return err
	}
	return checkEcho(server, string(res))
}

// listTools lists the tools and returns the result's size.
func (c *httpClient) listTools(ctx context.Context) (int, error) {
	params := httpListParams
	if c.session != "" {
		params = []byte("{}")
	}
	res, err := c.call(ctx, "tools/list", "", params)
	if err != nil {
		return 0, err
	}
	if !bytes.Contains(res, []byte(`"tools"`)) {
		return 0, fmt.Errorf("tools/list at %s: unexpected result %.200s", c.url, res)
	}
	return len(res), nil
}
