package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The HTTP floors: the least an HTTP-to-stdio MCP proxy does, with none of
// mcpd's code, as the gRPC relay (relay.go) is for gRPC. A separate process
// (this binary re-executed with -serve-http-floor) spawns its own copy of
// the server and serves, on a loopback port:
//
//	POST /relay  each JSON-RPC request relayed to its child over stdio (the
//	             same session code as the direct column), its result sent
//	             back as application/json: the floor for calls;
//	POST /list   answered with the bytes of the child's tools/list result,
//	             fetched once at start: the floor for cached lists.
//
// A notification is answered 202 with no body. No header is checked.

// maxFloorBody bounds one request body of the floors.
const maxFloorBody = 32 << 20

// floorHandler serves /relay and /list for one child.
func floorHandler(dc *direct, list json.RawMessage) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, r *http.Request, result func(jsonrpc.Envelope) (json.RawMessage, error)) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxFloorBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		env, err := jsonrpc.DecodeEnvelope(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(env.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		out := append([]byte(`{"jsonrpc":"2.0","id":`), env.ID...)
		res, err := result(env)
		if err != nil {
			msg, _ := json.Marshal(err.Error())
			out = append(append(append(out, `,"error":{"code":-32603,"message":`...), msg...), "}}"...)
		} else {
			out = append(append(append(out, `,"result":`...), res...), '}')
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	}
	mux.HandleFunc("POST /relay", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(env jsonrpc.Envelope) (json.RawMessage, error) {
			return dc.call(r.Context(), env.Method, env.Params)
		})
	})
	mux.HandleFunc("POST /list", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, func(jsonrpc.Envelope) (json.RawMessage, error) { return list, nil })
	})
	return mux
}

// serveHTTPFloor runs the floors on addr (a loopback address) in front of
// command until SIGTERM or SIGINT. Its first lines on stdout are "pid N",
// the child's pid, and "addr HOST:PORT".
func serveHTTPFloor(addr string, command []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dc, err := startFloorChild(ctx, "-serve-http-floor", "httpfloor", command)
	if err != nil {
		return err
	}
	defer dc.close()
	list, err := dc.call(ctx, "tools/list", nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	fmt.Printf("addr %s\n", ln.Addr())
	srv := &http.Server{Handler: floorHandler(dc, list), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // owned: waited for below
	select {
	case <-ctx.Done():
		_ = srv.Close()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// httpFloor is a running floor process.
type httpFloor struct {
	cmd         *exec.Cmd
	relay, list *httpClient
}

// startHTTPFloor starts the floors for t on a free loopback port.
func startHTTPFloor(reg *registry, t target, conns int) (*httpFloor, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(self, append([]string{"-serve-http-floor", "127.0.0.1:0", "--", t.Command}, t.Args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start HTTP floor for %s: %w", t.Name, err)
	}
	reg.add(cmd.Process.Pid)
	f := &httpFloor{cmd: cmd}
	br := bufio.NewReader(out)
	var addr string
	for _, key := range []string{"pid ", "addr "} {
		line, err := br.ReadString('\n')
		v, ok := strings.CutPrefix(strings.TrimSpace(line), key)
		if !ok || err != nil {
			f.close()
			return nil, fmt.Errorf("HTTP floor for %s did not start (%q, %v)", t.Name, line, err)
		}
		if key == "pid " {
			n, _ := strconv.Atoi(v)
			reg.add(n)
		} else {
			addr = v
		}
	}
	f.relay = newHTTPClient("http://"+addr+"/relay", conns)
	f.list = newHTTPClient("http://"+addr+"/list", conns)
	return f, nil
}

// close stops the floor process (which stops its child) and waits for it.
func (f *httpFloor) close() {
	if f.relay != nil {
		f.relay.close()
		f.list.close()
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { // owned: waited for below
		_ = f.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
}
