package subscriptions

import (
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// publish hands ev to every stream that wants it; it never blocks.
func (m *Manager) publish(ev Event) {
	m.mu.RLock()
	targets := make([]*Stream, 0, len(m.streams))
	for _, st := range m.streams {
		if st.wants(&ev) && m.reaches(st, &ev) {
			targets = append(targets, st)
		}
	}
	m.mu.RUnlock()
	if len(targets) > 1 {
		ev.Memo = new(Memo)
		if m.opts.OnFanOut != nil {
			m.opts.OnFanOut(len(targets))
		}
	}
	shared := &ev // one copy for every queue
	for _, st := range targets {
		st.q.push(shared)
	}
}

// OnNotification takes a notification of server's child that is not tied
// to a request (the supervisor's session hook): list changes, resource
// updates and log messages are fanned out; anything else is ignored. It
// never blocks.
func (m *Manager) OnNotification(server, method string, params json.RawMessage) {
	m.notification(Target{Server: server}, method, params)
}

// OnLogDuringCalls is OnNotification (OnInstanceNotification, for the
// instance key) of a notifications/message sent while calls were in
// flight at the child, none of which it could be given to: its event is
// marked DuringCalls.
func (m *Manager) OnLogDuringCalls(server, key string, params json.RawMessage) {
	m.notificationOf(Target{server, key}, "notifications/message", params, true)
}

// notification maps one child notification to an event, tells OnChange
// and publishes it.
func (m *Manager) notification(t Target, method string, params json.RawMessage) {
	m.notificationOf(t, method, params, false)
}

// notificationOf is notification, the event marked DuringCalls as during
// says.
func (m *Manager) notificationOf(t Target, method string, params json.RawMessage, during bool) {
	server := t.Server
	ev := Event{Server: server, Params: params, Time: time.Now(), inst: t.Instance, DuringCalls: during}
	switch method {
	case "notifications/tools/list_changed":
		ev.Kind = KindToolsListChanged
	case "notifications/prompts/list_changed":
		ev.Kind = KindPromptsListChanged
	case "notifications/resources/list_changed":
		ev.Kind = KindResourcesListChanged
		if u := m.existing(t); u != nil {
			u.resourcesListChanged() // legacy.go
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			m.log.Debug("resources/updated without uri dropped", zap.String("server", server))
			return
		}
		ev.Kind, ev.URI = KindResourceUpdated, p.URI
	case "notifications/message":
		ev.Kind = KindLog
	case "notifications/tasks/status":
		ev.Kind = KindTaskStatus
	default:
		return
	}
	m.publish(ev)
}

// OnState takes a lifecycle transition of a server: it is published to the
// streams watching state, it wakes that server's upstream (a new child may
// be ready), and a crash loop or failure ends the streams that need the
// server upstream with an error naming the server and the reason.
func (m *Manager) OnState(se StateEvent) {
	m.publish(Event{Kind: KindState, Server: se.Server, State: se.State, Pid: se.Pid, Exit: se.Exit, Error: se.Error, Time: se.Time, inst: se.Instance})
	if u := m.stateUpstream(se); u != nil { // own.go
		u.nudge()
	}
	if se.State != "crashloop" && se.State != "failed" {
		return
	}
	reason := se.Error
	if reason == "" {
		reason = fmt.Sprintf("server %q is in %s", se.Server, se.State)
	}
	var victims []*Stream
	for _, st := range m.openStreams() {
		if m.wantsOf(st, Target{se.Server, se.Instance}).any() {
			victims = append(victims, st)
		}
	}
	for _, st := range victims {
		st.fail(se.Server, fmt.Sprintf("subscription to server %q ended: %s", se.Server, reason))
	}
	if len(victims) > 0 {
		m.log.Warn("subscriptions ended", zap.String("server", se.Server), zap.String("state", se.State), zap.Int("streams", len(victims)))
	}
}
