package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// modernTaskDoor is a 2026-07-28 host on one door of mcpd: call sends a
// request and returns its result; listen opens a subscriptions/listen
// (id "L") with filter and returns its acknowledgement's params and a
// reader of what comes on it next.
type modernTaskDoor struct {
	call   func(t *testing.T, method, params string) json.RawMessage
	listen func(t *testing.T, filter string) (ack json.RawMessage, next func() *jsonrpc.Message)
}

const modernTasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// A task's notifications/tasks/status reaches a 2026-07-28 host on the
// subscriptions/listen whose taskIds name the task, tagged with the
// listen's id, through the aggregate and the per-server HTTP doors and
// `bridge --all`, whether the task's server is legacy (beta, which sends
// every status) or 2026-07-28 (alpha, which sends those its listen from
// mcpd names); the status of a task the listen did not name is not sent.
func TestTaskStatusReachesModernListen(t *testing.T) {
	d, base := startHTTPDaemon(t, extServers())
	type door struct {
		name, prefix string
		door         func(t *testing.T) modernTaskDoor
	}
	var doors []door
	for _, server := range []string{"beta", "alpha"} {
		doors = append(doors,
			door{server + " http /mcp", server + "__", func(t *testing.T) modernTaskDoor { return httpTaskDoor(t, base+"/mcp") }},
			door{server + " http /servers/" + server + "/mcp", "", func(t *testing.T) modernTaskDoor { return httpTaskDoor(t, base+"/servers/"+server+"/mcp") }},
			door{server + " bridge all", server + "__", func(t *testing.T) modernTaskDoor { return stdioTaskDoor(t, d) }})
	}
	for _, tc := range doors {
		t.Run(tc.name, func(t *testing.T) {
			door := tc.door(t)
			start := `{"name":"` + tc.prefix + `start_task","arguments":{}}`
			named, other := taskIDOf(t, door.call(t, "tools/call", start)), taskIDOf(t, door.call(t, "tools/call", start))
			ack, next := door.listen(t, `{"taskIds":["`+named+`"]}`)
			var agreed struct {
				Notifications struct {
					TaskIDs []string `json:"taskIds"`
				} `json:"notifications"`
			}
			if json.Unmarshal(ack, &agreed) != nil || !slices.Equal(agreed.Notifications.TaskIDs, []string{named}) {
				t.Fatalf("acknowledged %s, want taskIds [%s]", ack, named)
			}
			setStatus := func(id string) {
				res := door.call(t, "tools/call", `{"name":"`+tc.prefix+`task_status","arguments":{"taskId":"`+id+`"}}`)
				if !strings.Contains(string(res), "set") {
					t.Fatalf("task_status %s = %s", id, res)
				}
			}
			// The other task's status first: sent in order on mcpd's one
			// stream, it would come before the named one's.
			setStatus(other)
			setStatus(named)
			for {
				m := next()
				if m.Method != taskStatus {
					continue
				}
				var p struct {
					TaskID string `json:"taskId"`
					Status string `json:"status"`
					Meta   map[string]json.RawMessage
				}
				var raw map[string]json.RawMessage
				_ = json.Unmarshal(m.Params, &raw)
				_ = json.Unmarshal(m.Params, &p)
				_ = json.Unmarshal(raw["_meta"], &p.Meta)
				if p.TaskID != named || p.Status != "cancelled" {
					t.Fatalf("status %s on the listen, want only task %s's, cancelled", m.Params, named)
				}
				if got := string(p.Meta[jsonrpc.MetaSubscriptionID]); got != `"L"` {
					t.Errorf("status tagged %s, want the listen's id \"L\"", got)
				}
				return
			}
		})
	}
}

// taskIDOf is the task id of a CreateTaskResult of either era.
func taskIDOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var v struct {
		TaskID string `json:"taskId"`
		Task   struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	_ = json.Unmarshal(res, &v)
	if v.TaskID != "" {
		return v.TaskID
	}
	if v.Task.TaskID == "" {
		t.Fatalf("start_task = %s: no task", res)
	}
	return v.Task.TaskID
}

// httpTaskDoor is a modernTaskDoor on the HTTP endpoint url.
func httpTaskDoor(t *testing.T, url string) modernTaskDoor {
	rpc := modernHTTP(url)
	return modernTaskDoor{
		call: func(t *testing.T, method, params string) json.RawMessage {
			t.Helper()
			res, rerr := rpc(t, method, params)
			if rerr != nil {
				t.Fatalf("%s %s: %v", method, params, rerr)
			}
			return res
		},
		listen: func(t *testing.T, filter string) (json.RawMessage, func() *jsonrpc.Message) {
			t.Helper()
			msgs := postStream(t, url, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{`+modernTasksMeta+`,"notifications":`+filter+`}}`,
				modernHeaders("subscriptions/listen", "")...)
			next := func() *jsonrpc.Message {
				t.Helper()
				select {
				case m, ok := <-msgs:
					if !ok {
						t.Fatal("the listen's stream ended")
					}
					return m
				case <-time.After(waitTimeout):
					t.Fatal("nothing on the listen")
				}
				return nil
			}
			return ackOf(t, next), next
		},
	}
}

// ackOf reads next until the listen's acknowledgement and returns its params.
func ackOf(t *testing.T, next func() *jsonrpc.Message) json.RawMessage {
	t.Helper()
	for {
		m := next()
		if m.Method == "notifications/subscriptions/acknowledged" {
			return m.Params
		}
		if m.Method == "" {
			t.Fatalf("the listen was answered: %s %v", m.Result, m.Error)
		}
	}
}

// postStream POSTs body with headers and returns the messages of its SSE
// response as they come; the stream is ended, and its reader waited for,
// when the test ends.
func postStream(t *testing.T, url, body string, headers ...string) <-chan *jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxT(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("POST %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("POST %s = %d", url, resp.StatusCode)
	}
	out := make(chan *jsonrpc.Message, 64)
	var wg sync.WaitGroup
	wg.Go(func() { // ends with the response, which cancel ends
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m jsonrpc.Message
				if json.Unmarshal([]byte(d), &m) == nil {
					select {
					case out <- &m:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return out
}

// stdioTaskDoor is a modernTaskDoor on `mcpdctl bridge --all`. Messages
// read while waiting for an answer are kept for the listen's reader.
func stdioTaskDoor(t *testing.T, d *daemon) modernTaskDoor {
	in, out := pipeBridge(t, bridgeCommand(d, "--all"))
	h := &rawHost{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	var kept []*jsonrpc.Message
	id := 0
	next := func() *jsonrpc.Message {
		t.Helper()
		if len(kept) > 0 {
			m := kept[0]
			kept = kept[1:]
			return m
		}
		return h.next(t)
	}
	return modernTaskDoor{
		call: func(t *testing.T, method, params string) json.RawMessage {
			t.Helper()
			id++
			want := fmt.Sprint(id)
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s,%s}`, id, method, modernTasksMeta, strings.TrimPrefix(params, "{")))
			for {
				m := h.next(t)
				if m.Method == "" && string(m.ID) == want {
					if m.Error != nil {
						t.Fatalf("%s %s: %v", method, params, m.Error)
					}
					return m.Result
				}
				kept = append(kept, m)
			}
		},
		listen: func(t *testing.T, filter string) (json.RawMessage, func() *jsonrpc.Message) {
			t.Helper()
			h.send(t, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{`+modernTasksMeta+`,"notifications":`+filter+`}}`)
			return ackOf(t, next), next
		},
	}
}
