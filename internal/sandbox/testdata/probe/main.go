// Command probe is a stdio MCP server (Go SDK) whose tools try what a
// sandbox denies, so tests can tell a confined server from a free one:
// read {path}, write {path}, connect {addr}, hog {mb}, spawn {n} and
// openfiles {n}. Each tool answers "ok: ..." or, as an error result,
// "denied: <the OS error>"; denials are also written to stderr.
//
// Started with the single argument "sleep", it sleeps (spawn's children).
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "sleep" {
		time.Sleep(time.Minute)
		return
	}
	if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(os.Stderr, "probe: %v\n", err)
	}
}

type pathIn struct {
	Path string `json:"path"`
}

type addrIn struct {
	Addr string `json:"addr"`
}

type countIn struct {
	N int `json:"n"`
}

func result(what string, err error) (*mcp.CallToolResult, any, error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: %s: denied: %v\n", what, err)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "denied: " + err.Error()}}}, nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok: " + what}}}, nil, nil
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandbox-probe", Version: "0.0.1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read", Description: "read a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.Path)
			return result(fmt.Sprintf("read %d bytes", len(b)), err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "write", Description: "create a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			return result("wrote "+in.Path, os.WriteFile(in.Path, []byte("probe\n"), 0o600))
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "connect", Description: "connect to a TCP address"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addrIn) (*mcp.CallToolResult, any, error) {
			c, err := net.DialTimeout("tcp", in.Addr, 5*time.Second)
			if err == nil {
				c.Close()
			}
			return result("connected to "+in.Addr, err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "hog", Description: "allocate and touch n MiB"},
		func(_ context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			var keep [][]byte
			for range in.N {
				b := make([]byte, 1<<20)
				for i := range b {
					b[i] = 1
				}
				keep = append(keep, b)
			}
			return result(fmt.Sprintf("allocated %d MiB", len(keep)), nil)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn", Description: "start n sleeping children, then kill them"},
		func(_ context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			var cmds []*exec.Cmd
			var err error
			for range in.N {
				c := exec.Command("/proc/self/exe", "sleep")
				if err = c.Start(); err != nil {
					break
				}
				cmds = append(cmds, c)
			}
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			if err != nil {
				err = fmt.Errorf("started %d: %w", len(cmds), err)
			}
			return result(fmt.Sprintf("started %d", len(cmds)), err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "openfiles", Description: "open /dev/null n times"},
		func(_ context.Context, _ *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			var files []*os.File
			var err error
			for range in.N {
				var f *os.File
				if f, err = os.Open("/dev/null"); err != nil {
					break
				}
				files = append(files, f)
			}
			for _, f := range files {
				f.Close()
			}
			if err != nil {
				err = fmt.Errorf("opened %d: %w", len(files), err)
			}
			return result(fmt.Sprintf("opened %d", len(files)), err)
		})
	return srv
}
