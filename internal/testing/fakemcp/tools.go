package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// tool is one entry of the fake's tool table. run returns the text of the
// result's single text content, or a JSON-RPC error.
type tool struct {
	name        string
	description string
	run         func(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error)
}

// tools is the fake's tool table; tools/list lists it in this order.
var tools = []tool{
	{"echo", `returns the "message" argument; optional "ms" delays the answer`, toolEcho},
	{"progress", `emits "count" (default 3) notifications/progress for the request's progressToken, then returns "done"; with "hold": true it waits after the first until a call of release`, toolProgress},
	{"release", `lets every held progress call go on, and returns how many there were`, toolRelease},
	{"sleep", `sleeps "ms" milliseconds and returns "slept"; on notifications/cancelled it does not answer`, toolSleep},
	{"crash", `exits the process (status 2) mid-call`, toolCrash},
	{"outoforder", `waits until "n" calls of this tool are pending, then answers them in reverse order with their "message"`, toolOutOfOrder},
	{"unknownid", `first sends a response with an id never used, then answers "ok" (or "message")`, toolUnknownID},
	{"invalid", `first sends a JSON object that is neither a request, a response nor a notification, then answers "ok" (or "message")`, toolInvalid},
	{"ping", `sends a ping request to the client and returns its answer as JSON text`, toolPing},
	{"roots", `sends roots/list to the client and returns the result JSON or "error <code>: <message>"`, toolRoots},
	{"initroots", `returns the answer to the roots/list of mode rootsatinit, as tool roots does`, toolInitRoots},
	{"sample", `sends sampling/createMessage to the client and returns the result JSON or "error <code>: <message>"; with "cancel": true it cancels that request at once and returns "cancelled"`, toolSample},
	{"stderrflood", `writes "mb" (default 1) MiB of stderr lines and returns "flooded"`, toolStderrFlood},
	{"stats", `returns {"methods":{method:count},"cancelled":[ids],"cancelReasons":[reasons]} as JSON text`, toolStats},
	{"meta", `returns the request's params._meta as JSON text`, toolMeta},
	{"changed", `emits notifications/<"kind">/list_changed (kind tools|prompts|resources) or, with "uri", notifications/resources/updated; on modern listens they are tagged with the subscription id`, toolChanged},
	{"log", `emits notifications/message with "level" (default info) and "data"; with "afterms", that many milliseconds after its answer (outside any request)`, toolLog},
	{"stallstdin", `returns "message" (default "stalled"), and the fake reads nothing more from its stdin for "ms" milliseconds (default: ever) while it stays alive and answers what it already read`, toolStall},
}

func textContent(text string) map[string]any {
	return map[string]any{"type": "text", "text": text}
}

func (s *server) callTool(r *req) (map[string]any, *jsonrpc.Error) {
	var name string
	_ = json.Unmarshal(r.params["name"], &name)
	args := map[string]json.RawMessage{}
	if a := r.params["arguments"]; a != nil {
		if json.Unmarshal(a, &args) != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "arguments must be an object")
		}
	}
	for _, t := range tools {
		if t.name == name {
			text, rerr := t.run(s, r, args)
			if rerr != nil {
				return nil, rerr
			}
			return map[string]any{"content": []any{textContent(text)}}, nil
		}
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %q", name)
}

func argInt(args map[string]json.RawMessage, key string, def int) int {
	var v int
	if json.Unmarshal(args[key], &v) != nil {
		return def
	}
	return v
}

func argString(args map[string]json.RawMessage, key string) string {
	var v string
	_ = json.Unmarshal(args[key], &v)
	return v
}

// wait sleeps ms milliseconds or until the request is cancelled; it reports
// whether the full time passed.
func wait(r *req, ms int) bool {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

func toolEcho(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	if ms := argInt(args, "ms", 0); ms > 0 {
		wait(r, ms)
	}
	return argString(args, "message"), nil
}

func toolProgress(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	token := r.meta["progressToken"]
	n := argInt(args, "count", 3)
	var held chan struct{}
	if string(args["hold"]) == "true" {
		held = make(chan struct{})
		s.mu.Lock()
		s.held = append(s.held, held)
		s.mu.Unlock()
	}
	for i := 1; token != nil && i <= n; i++ {
		if i == 2 && held != nil {
			select {
			case <-held:
			case <-r.ctx.Done():
				return "", errNoReply
			}
		}
		s.notify("notifications/progress", map[string]any{
			"progressToken": token, "progress": i, "total": n, "message": fmt.Sprintf("step %d", i),
		})
	}
	return "done", nil
}

func toolRelease(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, c := range held {
		close(c)
	}
	return strconv.Itoa(len(held)), nil
}

func toolSleep(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	wait(r, argInt(args, "ms", 1000))
	return "slept", nil // not sent if cancelled
}

func toolCrash(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s.errLine("fakemcp: crash tool called")
	os.Exit(exitCrashTool)
	return "", nil
}

// barrier collects the calls of one outoforder group.
type barrier struct {
	waiters []*waiter
}

type waiter struct {
	seq  int64         // order in which the request was read
	turn chan struct{} // closed when it is this call's turn to answer
	next *waiter       // answers after this one
}

func toolOutOfOrder(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	n := argInt(args, "n", 2)
	me := &waiter{seq: r.seq, turn: make(chan struct{})}
	s.mu.Lock()
	b := s.barriers[n]
	if b == nil {
		b = &barrier{}
		s.barriers[n] = b
	}
	b.waiters = append(b.waiters, me)
	if len(b.waiters) == n {
		delete(s.barriers, n)
		// The last request read answers first, the first one last.
		sort.Slice(b.waiters, func(i, j int) bool { return b.waiters[i].seq > b.waiters[j].seq })
		for i := 0; i+1 < n; i++ {
			b.waiters[i].next = b.waiters[i+1]
		}
		close(b.waiters[0].turn)
	}
	s.mu.Unlock()
	select {
	case <-me.turn:
	case <-r.ctx.Done():
		return "", errNoReply
	}
	s.reply(r, map[string]any{"content": []any{textContent(argString(args, "message"))}}, nil)
	if me.next != nil {
		close(me.next.turn)
	}
	return "", errNoReply
}

func toolUnknownID(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s.write(map[string]any{"jsonrpc": jsonrpc.Version, "id": 987654321, "result": map[string]any{"bogus": true}})
	return okOr(args), nil
}

func toolInvalid(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s.write(map[string]any{"jsonrpc": jsonrpc.Version, "note": "no method, no id"})
	return okOr(args), nil
}

// okOr returns the "message" argument, or "ok" without one.
func okOr(args map[string]json.RawMessage) string {
	if m := argString(args, "message"); m != "" {
		return m
	}
	return "ok"
}

func toolPing(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	m, err := s.request(r.ctx, "ping", nil, nil)
	if err != nil {
		return "", errNoReply
	}
	return answerText(m), nil
}

func toolRoots(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	m, err := s.request(r.ctx, "roots/list", nil, nil)
	if err != nil {
		return "", errNoReply
	}
	return answerText(m), nil
}

func toolInitRoots(s *server, _ *req, _ map[string]json.RawMessage) (string, *jsonrpc.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initRoots, nil
}

func toolSample(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	params := map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": textContent("hello?")}},
		"maxTokens": 10,
	}
	var afterWrite func(id int64)
	if strings.Contains(string(args["cancel"]), "true") {
		afterWrite = func(id int64) {
			s.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "fake cancels"})
		}
		// The client must not answer a request its peer cancelled; stop
		// waiting after a short while and report what happened.
		ctx, cancel := context.WithTimeout(r.ctx, 200*time.Millisecond)
		defer cancel()
		m, err := s.request(ctx, "sampling/createMessage", params, afterWrite)
		if err != nil {
			return "cancelled", nil
		}
		return "answered after cancel: " + answerText(m), nil
	}
	m, err := s.request(r.ctx, "sampling/createMessage", params, nil)
	if err != nil {
		return "", errNoReply
	}
	return answerText(m), nil
}

func answerText(m *jsonrpc.Message) string {
	if m.Error != nil {
		return fmt.Sprintf("error %d: %s", m.Error.Code, m.Error.Message)
	}
	return string(compact(m.Result))
}

func toolStderrFlood(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	mb := argInt(args, "mb", 1)
	line := strings.Repeat("f", 1023)
	for i := 0; i < mb*1024; i++ {
		s.errLine(line)
	}
	return "flooded", nil
}

func toolStats(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	b, _ := json.Marshal(s.Stats())
	return string(b), nil
}

func toolMeta(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	m := r.params["_meta"]
	if m == nil {
		m = []byte("null")
	}
	return string(compact(m)), nil
}

func toolChanged(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	method := "notifications/" + argString(args, "kind") + "/list_changed"
	params := map[string]any{}
	uri := argString(args, "uri")
	if uri != "" {
		method = "notifications/resources/updated"
		params["uri"] = uri
	}
	// Under fanMu: every listen gets this change, or none that is
	// acknowledged after it.
	s.fanMu.RLock()
	defer s.fanMu.RUnlock()
	s.mu.Lock()
	var ids []string
	for id := range s.listens {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	if s.flags["modern"] || r.modern {
		for _, id := range ids {
			p := map[string]any{"_meta": map[string]any{jsonrpc.MetaSubscriptionID: json.RawMessage(id)}}
			for k, v := range params {
				p[k] = v
			}
			s.notify(method, p)
		}
		return fmt.Sprintf("notified %d listens", len(ids)), nil
	}
	s.notify(method, params)
	return "notified", nil
}

func toolLog(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	level := argString(args, "level")
	if level == "" {
		level = "info"
	}
	params := map[string]any{"level": level, "logger": "fakemcp", "data": json.RawMessage(orNull(args["data"]))}
	if ms := argInt(args, "afterms", 0); ms > 0 {
		time.AfterFunc(time.Duration(ms)*time.Millisecond, func() { s.notify("notifications/message", params) })
		return "logging later", nil
	}
	s.notify("notifications/message", params)
	return "logged", nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return []byte("null")
	}
	return b
}

// Stats is what the fake's stats tool reports.
type Stats struct {
	// Methods counts every message received by method ("response" for
	// answers to the fake's own requests).
	Methods map[string]int `json:"methods"`
	// Cancelled lists the requestId of every notifications/cancelled received.
	Cancelled []json.RawMessage `json:"cancelled"`
	// CancelReasons are their reasons, in the same order.
	CancelReasons []string `json:"cancelReasons"`
}

func (s *server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Methods: map[string]int{}, Cancelled: append([]json.RawMessage{}, s.cancelled...),
		CancelReasons: append([]string{}, s.cancelReasons...)}
	for k, v := range s.counts {
		st.Methods[k] = v
	}
	return st
}

func toolStall(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	if msg := argString(args, "message"); msg != "" {
		return msg, nil
	}
	return "stalled", nil // the reader stalls: noteStall, waitStall
}

// noteStall records, for the reader, a stallstdin call it just read.
func (s *server) noteStall(r *req) {
	if r.method != "tools/call" || argString(r.params, "name") != "stallstdin" {
		return
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(r.params["arguments"], &args)
	s.mu.Lock()
	s.stall, s.stallFor = true, time.Duration(argInt(args, "ms", 0))*time.Millisecond
	s.mu.Unlock()
}

// waitStall stops the reader as a stallstdin call asked.
func (s *server) waitStall() {
	s.mu.Lock()
	stall, d := s.stall, s.stallFor
	s.stall = false
	s.mu.Unlock()
	if !stall {
		return
	}
	s.errLine("fakemcp: not reading stdin")
	if d > 0 {
		time.Sleep(d)
		s.errLine("fakemcp: reading stdin again")
		return
	}
	for {
		time.Sleep(time.Hour) // until a signal
	}
}
