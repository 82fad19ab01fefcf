package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The relay baseline: the least any gRPC-to-stdio proxy does, with none of
// mcpd's api, supervisor, cache, metrics or stamping. A separate process
// (this binary re-executed with -serve-relay) spawns its own copy of the
// server, negotiates the era with the same stdio client the direct column
// uses, and answers each server-streaming call (CallTool's shape) by
// sending the request's text as tools/call params to its child and
// streaming the result back. mcpd − relay is then mcpd's own code; relay −
// direct − bare is what the extra process hop costs on this machine.
const relayStreamMethod = "/" + bareService + "/Relay"

// relayServiceDesc serves Relay; its handler is bound to one child.
func relayServiceDesc(dc *direct) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: bareService,
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{
			StreamName:    "Relay",
			ServerStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				in := new(wrapperspb.StringValue)
				if err := stream.RecvMsg(in); err != nil {
					return err
				}
				res, err := dc.call(stream.Context(), "tools/call", json.RawMessage(in.Value))
				if err != nil {
					return err
				}
				return stream.SendMsg(wrapperspb.String(string(res)))
			},
		}},
	}
}

// serveRelay runs the relay on path in front of command until SIGTERM or
// SIGINT. Its first line on stdout is "pid N", the child's pid, so the
// benchmark can check the child is gone at the end.
func serveRelay(path string, command []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dc, err := startFloorChild(ctx, "-serve-relay", "relay", command)
	if err != nil {
		return err
	}
	defer dc.close()
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen %s: %w", path, err)
	}
	gs := grpc.NewServer()
	gs.RegisterService(relayServiceDesc(dc), nil)
	done := make(chan error, 1)
	go func() { done <- gs.Serve(ln) }() // owned: waited for below
	select {
	case <-ctx.Done():
		gs.Stop()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// startRelay starts a relay process for t on path and connects to it.
func startRelay(ctx context.Context, reg *registry, path string, t target) (*bare, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(self, append([]string{"-serve-relay", path, "--", t.Command}, t.Args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start relay for %s: %w", t.Name, err)
	}
	reg.add(cmd.Process.Pid)
	r := &bare{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if pid, ok := strings.CutPrefix(strings.TrimSpace(line), "pid "); ok && err == nil {
		n, _ := strconv.Atoi(pid)
		reg.add(n)
	} else {
		r.close()
		return nil, fmt.Errorf("relay for %s did not start its child (%q, %v)", t.Name, line, err)
	}
	if err := waitSocket(ctx, path, 10*time.Second); err != nil {
		r.close()
		return nil, fmt.Errorf("relay for %s: %w", t.Name, err)
	}
	if r.conn, err = dialFloor(path); err != nil {
		r.close()
		return nil, fmt.Errorf("dial relay for %s: %w", t.Name, err)
	}
	return r, nil
}

// relayEcho calls echo through the relay and checks the result.
func (b *bare) relayEcho(ctx context.Context, server string) error {
	out, err := streamOnce(ctx, b.conn, &relayStreamDesc, relayStreamMethod, wrapperspb.String(string(echoParams)))
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return checkEcho(server, out.Value)
}

// relayStreamDesc describes the Relay method for the client.
var relayStreamDesc = grpc.StreamDesc{StreamName: "Relay", ServerStreams: true}

// startFloorChild starts the server command of a floor process (flag names
// the mode, for the error) and prints "pid N", the child's pid, so the
// benchmark can check the child is gone at the end.
func startFloorChild(ctx context.Context, flag, name string, command []string) (*direct, error) {
	if len(command) == 0 {
		return nil, errors.New(flag + " needs the server's command after the flags")
	}
	dc, _, err := startDirect(ctx, &registry{}, target{Name: name, Command: command[0], Args: command[1:]})
	if err != nil {
		return nil, err
	}
	fmt.Printf("pid %d\n", dc.pid())
	return dc, nil
}
