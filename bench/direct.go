package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// target is one MCP server the benchmark drives: how to spawn it and how
// to call its echo tool.
type target struct {
	// Name is the server name in mcpd's config and in the table.
	Name    string
	Command string
	Args    []string
}

// echoArgs is the arguments object of every echo call.
const echoArgs = `{"message":"hello from mcpd-bench"}`

// echoParams are the tools/call params of a direct echo call.
var echoParams = json.RawMessage(`{"name":"echo","arguments":` + echoArgs + `}`)

// direct is an app that spawns its own copy of a server and talks to it
// over stdio with mcpd's own transport and session packages: the baseline
// every "through mcpd" figure is compared with.
type direct struct {
	t    target
	proc *transport.Process
	sess *session.Session
}

// startDirect spawns t and negotiates the era; it returns the client and how
// long spawn + handshake took.
func startDirect(ctx context.Context, reg *registry, t target) (*direct, time.Duration, error) {
	start := time.Now()
	proc, err := transport.Start(transport.Options{
		Name:          t.Name,
		Command:       t.Command,
		Args:          t.Args,
		ShutdownGrace: 2 * time.Second,
		Logger:        zap.NewNop(),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("start %s directly: %w", t.Name, err)
	}
	reg.add(proc.Pid())
	sess := session.New(proc, session.Options{Server: t.Name, Logger: zap.NewNop()})
	d := &direct{t: t, proc: proc, sess: sess}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := sess.Handshake(hctx); err != nil {
		d.close()
		return nil, 0, fmt.Errorf("handshake with %s: %w", t.Name, err)
	}
	return d, time.Since(start), nil
}

// call sends one request and fails on a transport error or an MCP error.
func (d *direct) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	resp, err := d.sess.Call(ctx, &session.Request{Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", method, d.t.Name, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s on %s: %w", method, d.t.Name, resp.Error)
	}
	return resp.Result, nil
}

// echo calls the echo tool and checks the text came back.
func (d *direct) echo(ctx context.Context) error {
	res, err := d.call(ctx, "tools/call", echoParams)
	if err != nil {
		return err
	}
	return checkEcho(d.t.Name, string(res))
}

// checkEcho verifies an echo result carries the message.
func checkEcho(server, result string) error {
	if !strings.Contains(result, "hello from mcpd-bench") {
		return fmt.Errorf("echo on %s: unexpected result %.200s", server, result)
	}
	return nil
}

// pid is the child's process id.
func (d *direct) pid() int { return d.proc.Pid() }

// close runs the MCP stdio stop sequence and waits for the session to end.
func (d *direct) close() {
	_ = d.proc.Stop()
	d.sess.Wait()
}
