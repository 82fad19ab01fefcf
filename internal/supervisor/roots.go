package supervisor

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
)

const (
	methodRootsList         = "roots/list"
	notifyRootsListChanged  = "notifications/roots/list_changed"
	rootsNotifyWriteTimeout = 5 * time.Second
)

// requestHandler answers the requests the child of sv sends to mcpd:
// through Options.OnRequest (the host apps), except that a roots/list no
// host answers (-32601) is answered from the spec's RootPaths, so a child
// told it may ask for roots never gets an error for asking.
func (sv *server) requestHandler() session.RequestHandler {
	name, on := sv.spec.Name, sv.sup.opts.OnRequest
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
		if sv.inst != nil && sv.inst.root != "" && method == methodRootsList && boolOn(sv.currentSpec().Roots) {
			// A root instance serves its root (instances.go).
			return RootsResult([]string{sv.inst.root}), nil
		}
		if sv.inst != nil {
			// Its owner answers it (instances.go).
			ctx = context.WithValue(ctx, requestInstanceKey{}, sv.requestInstance())
		}
		if on != nil {
			res, rerr := on(ctx, name, method, params)
			if method != methodRootsList || rerr == nil || rerr.Code != jsonrpc.CodeMethodNotFound {
				return res, rerr
			}
		}
		spec := sv.currentSpec() // a reload may change the list (reload.go)
		if method != methodRootsList || !boolOn(spec.Roots) {
			return nil, &session.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		}
		return RootsResult(spec.RootPaths), nil
	}
}

// methodElicitComplete is the notification that ends a url elicitation; it
// goes to the app that was sent the elicitation, never to subscribers.
const methodElicitComplete = "notifications/elicitation/complete"

// hostNotification hands a child's notification for the app that answered
// one of its requests to Options.OnHostNotification, with the instance in
// its ctx as requestHandler puts it.
func (sv *server) hostNotification(n session.Notification) {
	on := sv.sup.opts.OnHostNotification
	if on == nil {
		return
	}
	ctx := context.Background()
	if sv.inst != nil {
		ctx = context.WithValue(ctx, requestInstanceKey{}, sv.requestInstance())
	}
	on(ctx, sv.spec.Name, n.Method, n.Params)
}

// RootsResult is the roots/list result naming dirs: "uri must be file://",
// and the name is the directory's base name.
func RootsResult(dirs []string) json.RawMessage {
	type root struct {
		URI  string `json:"uri"`
		Name string `json:"name,omitempty"`
	}
	roots := make([]root, 0, len(dirs))
	for _, d := range dirs {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(d)}
		roots = append(roots, root{URI: u.String(), Name: filepath.Base(d)})
	}
	b, _ := json.Marshal(map[string]any{"roots": roots})
	return b
}

// announceRoots tells the ready child that its roots changed (mcpd declares
// roots.listChanged), when a reload changed the configured list of a server
// whose roots are on. The write runs beside the loop, bounded, so that a
// child not reading its stdin cannot hold the loop.
func (sv *server) announceRoots(old, spec Spec) {
	c := sv.ready.Load()
	if c == nil || !boolOn(spec.Roots) || slices.Equal(old.RootPaths, spec.RootPaths) {
		return
	}
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, rootsNotifyWriteTimeout)
		defer cancel()
		if err := c.sess.Notify(ctx, notifyRootsListChanged, nil); err != nil {
			sv.log.Debug("roots list change not sent", zap.Error(err))
		}
	}()
}
