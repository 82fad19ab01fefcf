package subscriptions

// HasDemand reports whether an open app stream wants anything from server's
// child itself: list changes, resource updates or log messages. Watching
// only mcpd's own state events is not demand (it needs no child), so a
// server watched that way may still be stopped for idleness.
func (m *Manager) HasDemand(server string) bool {
	return m.HasDemandOn(Target{Server: server})
}

// reportDemand tells Options.OnDemand what the union of the streams wants
// from server (called whenever it is computed: after every change of a
// stream, by the upstream's reconcile).
func (m *Manager) reportDemand(t Target, demand bool) {
	if m.opts.OnDemand != nil {
		m.opts.OnDemand(t, demand)
	}
}
