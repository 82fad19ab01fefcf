package core

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// This file ties hosts to the instances of shared servers (supervisor
// instances.go):
//
//   - a request an instance's child sends (sampling, elicitation,
//     roots/list) goes to a host of the instance's owner: one registered on
//     a connection that owns the instance, or by the same app (a "client"
//     instance) or for the same root (a "root" one), never to a host of
//     another app that merely serves the same server;
//   - a host that declares roots and names no root (no mcpd-root
//     metadata, no mcpdctl bridge --root) is asked for its roots when its
//     app first calls or subscribes to a "root" server without naming a
//     root; the first root that is a file:// directory is the root of its
//     app's calls and subscriptions (the instance of a "root" server they
//     reach). It is asked once per registration: a host whose roots
//     change registers again to move.

// hostRootWait bounds how long a call waits for its host's roots/list
// answer, asked at registration.
const hostRootWait = 5 * time.Second

// hostScope is whose a host is: its app identity (appIdentity) and the
// root its calls name ("" for none).
type hostScope struct {
	app, root string
}

// ownedBy reports whether h may answer a request of the instance ri.
func (h *host) ownedBy(ri supervisor.RequestInstance) bool {
	if h.conn != 0 && slices.Contains(ri.Owners, h.conn) {
		return true
	}
	if ri.Share == supervisor.ShareRoot {
		return h.rootOf() == ri.Key
	}
	return h.scope.app != "" && h.scope.app == ri.Key
}

// rootOf is the root h's calls are made in: the one it names, else the
// first one it declared (once known).
func (h *host) rootOf() string {
	if h.scope.root != "" {
		return h.scope.root
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.declaredRoot
}

// learnRoots asks h for its roots, the first time it is called, and keeps
// the first directory among them; rootsKnown is closed once that is done,
// whatever the answer. The caller's cancellation does not cut the
// request short for the callers waiting for the same answer.
func (r *hostRegistry) learnRoots(ctx context.Context, h *host) {
	h.mu.Lock()
	asked := h.rootsAsked
	h.rootsAsked = true
	h.mu.Unlock()
	if asked {
		return
	}
	defer close(h.rootsKnown)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hostRootWait)
	defer cancel()
	res, rerr := r.send(ctx, h, "", methodRootsList, json.RawMessage(`{}`))
	if rerr != nil {
		return
	}
	root := firstRootDir(res)
	h.mu.Lock()
	h.declaredRoot = root
	h.mu.Unlock()
}

// firstRootDir is the first root of a roots/list result whose file://
// URI names an absolute directory, as a clean path; "" for none.
func firstRootDir(res json.RawMessage) string {
	var out struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	if json.Unmarshal(res, &out) != nil {
		return ""
	}
	for _, r := range out.Roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
			continue
		}
		return filepath.Clean(u.Path)
	}
	return ""
}

// declaredRoot returns the root declared by a host of the connection conn
// or of the app app that answers roots and names no root itself, waiting
// (bounded by ctx and hostRootWait) for its answer; "" for none.
func (r *hostRegistry) declaredRoot(ctx context.Context, conn uint64, app string) string {
	r.mu.Lock()
	var h *host
	for i := len(r.hosts) - 1; i >= 0 && h == nil; i-- {
		x := r.hosts[i]
		if x.caps.roots && x.scope.root == "" && ((conn != 0 && x.conn == conn) || (app != "" && x.scope.app == app)) {
			h = x
		}
	}
	r.mu.Unlock()
	if h == nil {
		return ""
	}
	r.learnRoots(ctx, h)
	select {
	case <-h.rootsKnown:
	case <-h.done:
	case <-ctx.Done():
	}
	return h.rootOf()
}

// knownRoots are the roots the hosts serving server have declared, without
// asking any of them: the root each names, else the one it answered when
// asked (learnRoots); among ri's owners only, when ri is set. Most recent
// host first, each root once.
func (r *hostRegistry) knownRoots(server string, ri *supervisor.RequestInstance) []string {
	r.mu.Lock()
	hosts := slices.Clone(r.hosts)
	r.mu.Unlock()
	var roots []string
	for _, h := range slices.Backward(hosts) {
		if !h.serves(server) || (ri != nil && !h.ownedBy(*ri)) {
			continue
		}
		if root := h.rootOf(); root != "" && !slices.Contains(roots, root) {
			roots = append(roots, root)
		}
	}
	return roots
}
