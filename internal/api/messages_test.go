package api

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func TestCallStreamsLogMessagesInOrder(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		if req.OnMessage == nil || req.OnProgress == nil {
			return nil, errors.New("no OnMessage or OnProgress")
		}
		req.OnMessage(json.RawMessage(`{"level":"info","data":"one"}`))
		req.OnProgress(json.RawMessage(`{"progressToken":"app","progress":1}`))
		req.OnMessage(json.RawMessage(`{"level":"debug","data":"two"}`))
		return &session.Response{Result: json.RawMessage(`{"done":true}`)}, nil
	}}
	h := newHarness(t, b)
	type eventStream interface {
		Recv() (*mcpdv1.CallToolEvent, error)
	}
	for _, open := range []func() (eventStream, error){
		func() (eventStream, error) {
			return h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "t"})
		},
		func() (eventStream, error) {
			return h.client.SendRequest(ctxT(t), &mcpdv1.SendRequestRequest{Server: "s", Method: "prompts/get", ParamsJson: `{"name":"p"}`})
		},
	} {
		stream, err := open()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			ev, err := stream.Recv()
			if err != nil {
				break
			}
			switch e := ev.Event.(type) {
			case *mcpdv1.CallToolEvent_MessageJson:
				got = append(got, "message "+e.MessageJson)
			case *mcpdv1.CallToolEvent_ProgressJson:
				got = append(got, "progress "+e.ProgressJson)
			case *mcpdv1.CallToolEvent_Response:
				got = append(got, "response "+e.Response.GetResultJson())
			}
		}
		want := []string{
			`message {"level":"info","data":"one"}`,
			`progress {"progressToken":"app","progress":1}`,
			`message {"level":"debug","data":"two"}`,
			`response {"done":true}`,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	}
}
