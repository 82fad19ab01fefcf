// Command apps is a stdio MCP server built with the official Go SDK that
// gates its MCP Apps UI tool on the client's declared
// capabilities.extensions["io.modelcontextprotocol/ui"], as the ext-apps
// SDK documents (getUiCapability): a test peer for mcpd's doors.
//
// Tool "chart" comes in two variants under one name: the UI variant
// (description "Chart (UI)", _meta.ui.resourceUri ui://apps-GATE/chart.html)
// for a client that declared the extension, the text-only variant
// (description "Chart (text)", no _meta) for any other. The UI resource
// ui://apps-GATE/chart.html (GATE: init or request) reads as text/html;profile=mcp-app with _meta.ui
// (csp, permissions).
//
// With -gate init (a 2025-11-25 server) the variant is chosen once, at
// initialize, from the capabilities the client declared there; the
// resource is registered only with the UI variant. With -gate request (a
// 2026-07-28 server) it is chosen per request from the request's _meta
// clientCapabilities: tools/list and resources/list are shaped by them.
// Every tools/list it answers is logged to stderr as "list ui=<bool>".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names the tests expect.
const (
	ExtensionUI = "io.modelcontextprotocol/ui"
	MimeTypeApp = "text/html;profile=mcp-app"
)

func main() {
	gate := flag.String("gate", "request", "init (legacy: decided at initialize) or request (modern: decided per request)")
	flag.Parse()
	resourceURI = "ui://apps-" + *gate + "/chart.html"
	if err := run(*gate); err != nil {
		fmt.Fprintf(os.Stderr, "apps: %v\n", err)
		os.Exit(1)
	}
}

// declaresUI reports whether caps declare the MCP Apps extension with its
// MIME type (getUiCapability(...)?.mimeTypes?.includes(RESOURCE_MIME_TYPE)).
func declaresUI(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	ext, ok := caps.Extensions[ExtensionUI].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	for _, t := range types {
		if t == MimeTypeApp {
			return true
		}
	}
	return false
}

// resourceURI is the UI resource, named by the gate so that the two
// kinds of server can be served side by side.
var resourceURI string

func uiTool() *mcp.Tool {
	return &mcp.Tool{Name: "chart", Description: "Chart (UI)",
		InputSchema: map[string]any{"type": "object"},
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": resourceURI}}}
}

func textTool() *mcp.Tool {
	return &mcp.Tool{Name: "chart", Description: "Chart (text)", InputSchema: map[string]any{"type": "object"}}
}

func chart(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := "chart: text only"
	if declaresUI(req.ClientCapabilities()) {
		text = "chart: with UI"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

var uiMeta = mcp.Meta{"ui": map[string]any{
	"csp":         map[string]any{"connectDomains": []any{"https://api.example.com"}, "resourceDomains": []any{"https://cdn.example.com"}},
	"permissions": map[string]any{"clipboardWrite": map[string]any{}},
}}

func addResource(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: resourceURI, Name: "chart-view", MIMEType: MimeTypeApp, Meta: uiMeta},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: resourceURI, MIMEType: MimeTypeApp, Text: "<!doctype html><title>chart</title>", Meta: uiMeta,
			}}}, nil
		})
}

func run(gate string) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpd-test-apps", Version: "0.0.1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:      &mcp.ToolCapabilities{ListChanged: true},
			Resources:  &mcp.ResourceCapabilities{},
			Extensions: map[string]any{ExtensionUI: map[string]any{}},
		},
	})
	switch gate {
	case "init":
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if p, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" {
					// Decided once, before the client can list.
					if declaresUI(p.Capabilities) {
						s.AddTool(uiTool(), chart)
						addResource(s)
					} else {
						s.AddTool(textTool(), chart)
					}
				}
				return next(ctx, method, req)
			}
		})
	case "request":
		s.AddTool(uiTool(), chart)
		addResource(s)
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				switch r := res.(type) {
				case *mcp.ListToolsResult:
					lr, _ := req.(*mcp.ListToolsRequest)
					ui := lr != nil && declaresUI(lr.ClientCapabilities())
					fmt.Fprintf(os.Stderr, "list ui=%v\n", ui)
					if !ui {
						for i, t := range r.Tools {
							if t.Name == "chart" {
								r.Tools[i] = textTool()
							}
						}
					}
				case *mcp.ListResourcesResult:
					lr, _ := req.(*mcp.ListResourcesRequest)
					if lr == nil || !declaresUI(lr.ClientCapabilities()) {
						r.Resources = nil
					}
				}
				return res, err
			}
		})
	default:
		return fmt.Errorf("-gate %q: want init or request", gate)
	}
	return s.Run(context.Background(), &mcp.StdioTransport{})
}
