package api

import (
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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

// eventToService is ev as the service gives it; its params are ev's,
// which are never written.
func eventToService(ev *subscriptions.Event) service.SubscriptionEvent {
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

// toProto is a as mcpd.v1's first event of a subscription.
func (a subscriptionAck) toProto() *mcpdv1.SubscriptionEvent {
	return &mcpdv1.SubscriptionEvent{
		Kind:       mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK,
		TimeUnixMs: a.opened.UnixMilli(),
		Ack:        &mcpdv1.SubscriptionAck{SubscriptionId: a.id, Servers: acksToProto(a.acks)},
	}
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

// protoKinds are the service's subscription event kinds as mcpd.v1 names
// them.
var protoKinds = map[service.SubscriptionKind]mcpdv1.SubscriptionEventKind{
	service.Ack:                  mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK,
	service.ToolsListChanged:     mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED,
	service.PromptsListChanged:   mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_PROMPTS_LIST_CHANGED,
	service.ResourcesListChanged: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCES_LIST_CHANGED,
	service.ResourceUpdated:      mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED,
	service.ServerState:          mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE,
	service.LogMessage:           mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE,
	service.Restarted:            mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED,
	service.Lagged:               mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED,
	service.Failed:               mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR,
	service.LogsLagged:           mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED,
	service.TaskStatus:           mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TASK_STATUS,
}

// SubscriptionEventToProto is ev as mcpd.v1 sends it, for a face whose
// own callers still take mcpd.v1 events.
func SubscriptionEventToProto(ev service.SubscriptionEvent) *mcpdv1.SubscriptionEvent {
	out := &mcpdv1.SubscriptionEvent{
		Kind:               protoKinds[ev.Kind],
		Server:             ev.Server,
		Uri:                ev.URI,
		ParamsJson:         string(ev.Params),
		State:              ev.State,
		Pid:                int64(ev.Pid),
		Exit:               ev.Exit,
		Error:              ev.Error,
		Synthetic:          ev.Synthetic,
		DuringCalls:        ev.DuringCalls,
		TimeUnixMs:         ev.Time.UnixMilli(),
		DroppedLogMessages: ev.DroppedLogMessages,
	}
	if ev.Ack != nil {
		out.Ack = &mcpdv1.SubscriptionAck{SubscriptionId: ev.Ack.ID, Servers: ServerAcksToProto(ev.Ack.Servers)}
	}
	return out
}

// ServerAcksToProto are acks as mcpd.v1 sends them.
func ServerAcksToProto(acks []service.ServerAck) []*mcpdv1.SubscriptionServerAck {
	out := make([]*mcpdv1.SubscriptionServerAck, 0, len(acks))
	for _, a := range acks {
		out = append(out, serverAckToProto(a))
	}
	return out
}

// serverAckToProto is one server's ack as mcpd.v1 sends it.
func serverAckToProto(a service.ServerAck) *mcpdv1.SubscriptionServerAck {
	return &mcpdv1.SubscriptionServerAck{
		Server:               a.Server,
		Era:                  a.Era,
		ToolsListChanged:     a.ToolsListChanged,
		PromptsListChanged:   a.PromptsListChanged,
		ResourcesListChanged: a.ResourcesListChanged,
		ResourceUris:         a.URIs,
		LogMessages:          a.Logs,
		ServerState:          a.State,
		Error:                a.Error,
	}
}
