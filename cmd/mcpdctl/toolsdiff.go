package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// pinTimeout bounds tools diff and approve, which list the server's tools.
const pinTimeout = 60 * time.Second

// runToolsDiff prints how server's tools differ from the pinned ones.
func (c *cli) runToolsDiff(ctx context.Context, server string, asJSON bool) error {
	ctx, client, err := c.dial(ctx, pinTimeout)
	if err != nil {
		return err
	}
	resp, err := client.GetToolChanges(ctx, &mcpdv1.GetToolChangesRequest{Server: server, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	if asJSON {
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(resp)
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, string(b))
		return nil
	}
	if resp.GetPinMode() == "off" {
		fmt.Fprintf(c.stdout, "%s does not pin its tools (\"pin\": \"off\")\n", sanitize(server))
		return nil
	}
	if len(resp.GetChanges()) == 0 {
		fmt.Fprintf(c.stdout, "%s: no changes since the tools were approved (pin %q)\n", sanitize(server), resp.GetPinMode())
		return nil
	}
	for _, ch := range resp.GetChanges() {
		c.printToolChange(ch)
	}
	verb := "served as they are (pin \"warn\")"
	if resp.GetPinMode() == "enforce" {
		verb = "withheld from apps until approved (pin \"enforce\")"
	}
	fmt.Fprintf(c.stdout, "\n%d change(s), %s. Accept with: mcpdctl tools approve %s [TOOL...]\n", len(resp.GetChanges()), verb, sanitize(server))
	return nil
}

// printToolChange prints one change: a header and a line diff of the two
// definitions, pretty-printed.
func (c *cli) printToolChange(ch *mcpdv1.ToolChange) {
	head := fmt.Sprintf("%s %s", ch.GetKind(), sanitize(ch.GetTool()))
	if len(ch.GetMembers()) > 0 {
		head += " (" + strings.Join(ch.GetMembers(), ", ") + ")"
	}
	if v := ch.GetVariant(); v != "" {
		// A server that shapes its tools by what the client declares.
		caps := ch.GetCapabilitiesJson()
		if caps == "" || v == "none" {
			caps = "nothing"
		}
		head += fmt.Sprintf(", variant %s for clients declaring %s", sanitize(v), sanitizeText(caps))
	}
	fmt.Fprintf(c.stdout, "%s\n--- pinned %s\n+++ current %s\n", head, ch.GetPinnedDigest(), ch.GetCurrentDigest())
	for _, l := range lineDiff(prettyLines(ch.GetPinnedJson()), prettyLines(ch.GetCurrentJson())) {
		fmt.Fprintln(c.stdout, sanitizeText(l))
	}
	fmt.Fprintln(c.stdout)
}

// prettyLines is a JSON text indented, one element a line.
func prettyLines(text string) []string {
	if text == "" {
		return nil
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(text), "", "  ") != nil {
		return []string{text}
	}
	return strings.Split(buf.String(), "\n")
}

// lineDiff is a unified-style diff of a and b (every line, prefixed with
// " ", "-" or "+"), from their longest common subsequence.
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}

// runToolsApprove accepts the current definitions of tools of server.
func (c *cli) runToolsApprove(ctx context.Context, server string, tools []string) error {
	ctx, client, err := c.dial(ctx, pinTimeout)
	if err != nil {
		return err
	}
	resp, err := client.ApproveTools(ctx, &mcpdv1.ApproveToolsRequest{Server: server, Tools: tools, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	if len(resp.GetApproved()) == 0 {
		fmt.Fprintf(c.stdout, "%s: nothing to approve\n", sanitize(server))
		return nil
	}
	fmt.Fprintf(c.stdout, "approved %s: %s\n", sanitize(server), sanitize(strings.Join(resp.GetApproved(), ", ")))
	return nil
}
