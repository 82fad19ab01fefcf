package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The gRPC client floor of the stdio bridge: the least a stdio-to-mcpd
// bridge process does, with none of the bridge's code. This binary
// re-executed with -serve-grpc-stdio SOCKET -- SERVER reads one JSON-RPC
// request per line on stdin, makes mcpd's own RPC for it (tools/call:
// SendRequest, read to its end; tools/list: ListTools) on one gRPC
// connection, and writes the answer as one line; initialize gets a
// minimal legacy answer, notifications nothing. The CPU section counts its
// process's CPU per call beside the bridge's.

// serveGRPCStdio runs the floor for server on mcpd's socket until stdin
// ends.
func serveGRPCStdio(socket string, args []string) error {
	if len(args) != 1 {
		return errors.New("-serve-grpc-stdio needs the server's name after --")
	}
	server := args[0]
	conn, err := dialApp(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := mcpdv1.NewMcpdClient(conn)
	ctx := context.Background()
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	var buf []byte
	for {
		line, err := in.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		env, err := jsonrpc.DecodeEnvelope(line)
		if err != nil || len(env.ID) == 0 {
			continue // a notification
		}
		result, rerr := floorAnswer(ctx, client, server, env)
		buf = append(append(buf[:0], `{"jsonrpc":"2.0","id":`...), env.ID...)
		if rerr != nil {
			msg, _ := json.Marshal(rerr.Error())
			buf = append(append(append(buf, `,"error":{"code":-32603,"message":`...), msg...), "}}\n"...)
		} else {
			buf = append(append(append(buf, `,"result":`...), result...), "}\n"...)
		}
		if _, err := out.Write(buf); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// floorAnswer is the result of one request of the floor.
func floorAnswer(ctx context.Context, client mcpdv1.McpdClient, server string, env jsonrpc.Envelope) ([]byte, error) {
	switch env.Method {
	case "initialize":
		return []byte(`{"protocolVersion":"` + jsonrpc.LegacyVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"grpc-floor","version":"1"}}`), nil
	case "tools/list":
		r, err := client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server})
		if err != nil {
			return nil, err
		}
		if len(r.GetServers()) != 1 {
			return nil, fmt.Errorf("ListTools answered %d servers", len(r.GetServers()))
		}
		return append(append([]byte(`{"tools":`), r.GetServers()[0].GetItemsJson()...), '}'), nil
	case "server/discover":
		return nil, errors.New("method not found")
	}
	stream, err := client.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: server, Method: env.Method, ParamsJson: string(env.Params)})
	if err != nil {
		return nil, err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env.Method, err)
		}
		if r := ev.GetResponse(); r != nil {
			if e := r.GetError(); e != nil {
				return nil, errors.New(e.GetMessage())
			}
			return []byte(r.GetResultJson()), nil
		}
	}
}

// startGRPCFloor starts the floor for t on mcpd's socket, driven by the
// same stdio client as the direct column and the bridge.
func (b *bench) startGRPCFloor(ctx context.Context, socket string, t target) (*direct, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	proc, err := transport.Start(transport.Options{
		Name: "grpc-floor-" + t.Name, Command: self, Args: []string{"-serve-grpc-stdio", socket, "--", t.Name},
		ShutdownGrace: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("start the gRPC client floor for %s: %w", t.Name, err)
	}
	b.reg.add(proc.Pid())
	sess := session.New(proc, session.Options{Server: "grpc-floor-" + t.Name, Protocol: session.ProtocolLegacy, Logger: zap.NewNop()})
	d := &direct{t: t, proc: proc, sess: sess}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := sess.Handshake(hctx); err != nil {
		d.close()
		return nil, fmt.Errorf("handshake with the gRPC client floor for %s: %w", t.Name, err)
	}
	return d, nil
}
