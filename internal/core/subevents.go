package core

import (
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// serviceKinds are the subscriptions' event kinds as the service names
// them.
var serviceKinds = map[subscriptions.Kind]service.SubscriptionKind{
	subscriptions.KindToolsListChanged:     service.ToolsListChanged,
	subscriptions.KindPromptsListChanged:   service.PromptsListChanged,
	subscriptions.KindResourcesListChanged: service.ResourcesListChanged,
	subscriptions.KindResourceUpdated:      service.ResourceUpdated,
	subscriptions.KindState:                service.ServerState,
	subscriptions.KindLog:                  service.LogMessage,
	subscriptions.KindRestarted:            service.Restarted,
	subscriptions.KindLagged:               service.Lagged,
	subscriptions.KindError:                service.Failed,
	subscriptions.KindLogsLagged:           service.LogsLagged,
	subscriptions.KindTaskStatus:           service.TaskStatus,
}

// EventToService is ev as the service gives it; its params are ev's,
// which are never written.
func EventToService(ev *subscriptions.Event) service.SubscriptionEvent {
	return service.SubscriptionEvent{
		Kind:               serviceKinds[ev.Kind],
		Server:             ev.Server,
		URI:                ev.URI,
		Params:             ev.Params,
		State:              ev.State,
		Pid:                ev.Pid,
		Exit:               ev.Exit,
		Error:              ev.Error,
		Synthetic:          ev.Synthetic,
		DuringCalls:        ev.DuringCalls,
		Time:               ev.Time,
		DroppedLogMessages: ev.LogsDropped,
	}
}

// toService is a as the service's first event of a subscription.
func (a subscriptionAck) toService() service.SubscriptionEvent {
	return service.SubscriptionEvent{Kind: service.Ack, Time: a.opened,
		Ack: &service.SubscriptionAck{ID: a.id, Servers: acksToService(a.acks)}}
}

// acksToService are acks as the service gives them: the same shape, so
// each converts (and the build stops if the two drift).
func acksToService(acks []subscriptions.ServerAck) []service.ServerAck {
	out := make([]service.ServerAck, 0, len(acks))
	for _, a := range acks {
		out = append(out, service.ServerAck(a))
	}
	return out
}
