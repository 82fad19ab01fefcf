package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpd-dev/mcpd/internal/session"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestConcurrentCallsOutOfOrder(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			s, _ := open(t, mode+",quiet", session.Options{})
			handshake(t, s)
			const n = 100
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					msg := fmt.Sprintf("m%d", i)
					resp, err := s.Call(context.Background(), tool("outoforder", fmt.Sprintf(`{"n":%d,"message":%q}`, n, msg)))
					switch {
					case err != nil:
						errs <- err
					case resp.Error != nil:
						errs <- resp.Error
					case !strings.Contains(string(resp.Result), `"text":"`+msg+`"`):
						errs <- fmt.Errorf("call %s got %s", msg, resp.Result)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if st := s.Stats(); st.InFlight != 0 || st.ResponsesDropped != 0 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestCancelMidCall(t *testing.T) {
	s, c := open(t, "modern", session.Options{})
	handshake(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, tool("sleep", `{"ms":600000}`))
		errc <- err
	}()
	c.waitStderr("recv tools/call 2") // id 1 was the probe
	// A second call in flight must not be cancelled.
	other := make(chan string, 1)
	go func() {
		other <- callTool(t, s, tool("echo", `{"message":"other","ms":200}`))
	}()
	c.waitStderr("recv tools/call 3")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	if got := <-other; got != "other" {
		t.Errorf("other call = %q", got)
	}
	c.waitStderr("cancelled 2")
	st := stats(t, s)
	if diff := cmp.Diff([]string{"2"}, rawStrings(st.Cancelled)); diff != "" {
		t.Errorf("child saw cancellations (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestDeadline(t *testing.T) {
	s, c := open(t, "legacy", session.Options{Protocol: session.ProtocolLegacy})
	handshake(t, s) // id 1 is initialize
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, tool("sleep", `{"ms":600000}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want context.DeadlineExceeded", err)
	}
	c.waitStderr("recv tools/call 2")
	c.waitStderr("cancelled 2")
}

func rawStrings(raws []json.RawMessage) []string {
	out := make([]string, len(raws))
	for i, r := range raws {
		out[i] = string(r)
	}
	return out
}

func TestChildCrashFailsPendingCalls(t *testing.T) {
	s, c := open(t, "modern", session.Options{})
	handshake(t, s)
	const n = 3
	errs := make(chan error, n+1)
	for range n {
		go func() {
			// No deadline: only the crash can end these calls.
			_, err := s.Call(context.Background(), tool("sleep", `{"ms":600000}`))
			errs <- err
		}()
	}
	for i := 2; i < 2+n; i++ {
		c.waitStderr(fmt.Sprintf("recv tools/call %d", i))
	}
	if st := s.Stats(); st.InFlight != n {
		t.Fatalf("in flight = %d, want %d", st.InFlight, n)
	}
	go func() {
		_, err := s.Call(context.Background(), tool("crash", `{}`))
		errs <- err
	}()
	for range n + 1 {
		err := <-errs
		if !errors.Is(err, session.ErrClosed) || !strings.Contains(err.Error(), `"fake"`) {
			t.Errorf("pending call = %v, want ErrClosed naming the server", err)
		}
	}
	<-s.Done()
	if _, err := s.Call(context.Background(), tool("echo", `{"message":"late"}`)); !errors.Is(err, session.ErrClosed) {
		t.Errorf("call after exit = %v, want ErrClosed", err)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("in flight after exit = %d", st.InFlight)
	}
}

// A response to an id mcpd never sent is dropped, counted and warned of
// (its caller would only see a timeout).
func TestUnknownIDDropped(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	s, _ := open(t, "dual", session.Options{Logger: zap.New(core)})
	handshake(t, s)
	if got := callTool(t, s, tool("unknownid", `{}`)); got != "ok" {
		t.Fatalf("unknownid = %q", got)
	}
	if st := s.Stats(); st.ResponsesDropped != 1 {
		t.Errorf("ResponsesDropped = %d, want 1", st.ResponsesDropped)
	}
	if n := logs.FilterMessage("response to an id mcpd never sent, dropped").Len(); n != 1 {
		t.Errorf("%d warnings of the unknown id, want 1: %v", n, logs.All())
	}
}

func TestProgressReachesOnlyItsCaller(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			s, _ := open(t, mode, session.Options{})
			handshake(t, s)
			tokens := []string{`"app-token"`, `7`, `"app-token-2"`}
			got := make([][]string, len(tokens))
			var wg sync.WaitGroup
			for i, tok := range tokens {
				wg.Go(func() {
					req := &session.Request{
						Method: "tools/call",
						Params: json.RawMessage(fmt.Sprintf(`{"name":"progress","arguments":{"count":%d},"_meta":{"progressToken":%s}}`, i+2, tok)),
						OnProgress: func(params json.RawMessage) {
							var p struct {
								ProgressToken json.RawMessage `json:"progressToken"`
								Progress      int             `json:"progress"`
							}
							_ = json.Unmarshal(params, &p)
							got[i] = append(got[i], fmt.Sprintf("%s:%d", p.ProgressToken, p.Progress))
						},
					}
					if text := callTool(t, s, req); text != "done" {
						t.Errorf("progress = %q", text)
					}
				})
			}
			wg.Wait()
			for i, tok := range tokens {
				var want []string
				for p := 1; p <= i+2; p++ {
					want = append(want, fmt.Sprintf("%s:%d", tok, p))
				}
				if diff := cmp.Diff(want, got[i]); diff != "" {
					t.Errorf("progress of %s (-want +got):\n%s", tok, diff)
				}
			}
			// The child never sees the app's token.
			seen := callTool(t, s, &session.Request{Method: "tools/call",
				Params: json.RawMessage(`{"name":"meta","_meta":{"progressToken":"app-token"}}`)})
			var meta map[string]json.RawMessage
			_ = json.Unmarshal([]byte(seen), &meta)
			if tok := string(meta["progressToken"]); tok == "" || tok == `"app-token"` {
				t.Errorf("child saw progressToken %s", tok)
			}
		})
	}
}

func TestProgressTokenMustBeStringOrInteger(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			s, _ := open(t, mode, session.Options{})
			handshake(t, s)
			for _, tok := range []string{`{"a":1}`, `[1]`, `1.5`, `1e3`, `true`} {
				req := &session.Request{Method: "tools/call",
					Params: json.RawMessage(`{"name":"echo","_meta":{"progressToken":` + tok + `}}`)}
				_, err := s.Call(t.Context(), req)
				if !errors.Is(err, session.ErrInvalidRequest) || !strings.Contains(err.Error(), "progressToken must be a string or an integer") {
					t.Errorf("progressToken %s: err = %v, want ErrInvalidRequest naming progressToken", tok, err)
				}
			}
			if st := s.Stats(); st.InFlight != 0 {
				t.Errorf("in flight after rejected calls = %d", st.InFlight)
			}
			// Strings and integers, negative ones too, still go through.
			for _, tok := range []string{`"x"`, `-3`, `12345678901`} {
				req := &session.Request{Method: "tools/call",
					Params: json.RawMessage(`{"name":"meta","_meta":{"progressToken":` + tok + `}}`)}
				if _, err := s.Call(t.Context(), req); err != nil {
					t.Errorf("progressToken %s: %v", tok, err)
				}
			}
		})
	}
}

func BenchmarkCall(b *testing.B) {
	for _, mode := range []string{"modern", "legacy"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := open(b, mode+",quiet", session.Options{})
			handshake(b, s)
			req := tool("echo", `{"message":"hi"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := s.Call(context.Background(), req)
				if err != nil || resp.Error != nil {
					b.Fatal(err, resp)
				}
			}
		})
	}
}
