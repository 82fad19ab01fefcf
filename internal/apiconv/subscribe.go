package apiconv

import (
	"time"

	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// WatchOf is req as the service takes it.
func WatchOf(req *mcpdv1.SubscribeRequest) service.Watch {
	return service.Watch{
		Servers:              req.GetServers(),
		ToolsListChanged:     req.GetToolsListChanged(),
		PromptsListChanged:   req.GetPromptsListChanged(),
		ResourcesListChanged: req.GetResourcesListChanged(),
		URIs:                 req.GetResourceUris(),
		State:                req.GetServerState(),
		Logs:                 req.GetLogMessages(),
		TaskStatus:           req.GetTaskStatus(),
		Client:               service.Client{Name: req.GetClient().GetName(), Version: req.GetClient().GetVersion()},
	}
}

// WatchToProto is w as the Subscribe RPC takes it.
func WatchToProto(w service.Watch) *mcpdv1.SubscribeRequest {
	return &mcpdv1.SubscribeRequest{
		Servers:              w.Servers,
		ToolsListChanged:     w.ToolsListChanged,
		PromptsListChanged:   w.PromptsListChanged,
		ResourcesListChanged: w.ResourcesListChanged,
		ResourceUris:         w.URIs,
		LogMessages:          w.Logs,
		ServerState:          w.State,
		TaskStatus:           w.TaskStatus,
		Client:               ClientToProto(w.Client),
	}
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

// serviceKinds are protoKinds the other way.
var serviceKinds = func() map[mcpdv1.SubscriptionEventKind]service.SubscriptionKind {
	m := make(map[mcpdv1.SubscriptionEventKind]service.SubscriptionKind, len(protoKinds))
	for s, p := range protoKinds {
		m[p] = s
	}
	return m
}()

// SubscriptionEventToProto is ev as mcpd.v1 sends it.
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

// SubscriptionEventOf is ev as the service gives it: its time is the
// zero time when ev has none.
func SubscriptionEventOf(ev *mcpdv1.SubscriptionEvent) service.SubscriptionEvent {
	out := service.SubscriptionEvent{
		Kind:               serviceKinds[ev.GetKind()],
		Server:             ev.GetServer(),
		URI:                ev.GetUri(),
		Params:             rawOrNil(ev.GetParamsJson()),
		State:              ev.GetState(),
		Pid:                int(ev.GetPid()),
		Exit:               ev.GetExit(),
		Error:              ev.GetError(),
		Synthetic:          ev.GetSynthetic(),
		DuringCalls:        ev.GetDuringCalls(),
		DroppedLogMessages: ev.GetDroppedLogMessages(),
	}
	if ms := ev.GetTimeUnixMs(); ms != 0 {
		out.Time = time.UnixMilli(ms)
	}
	if a := ev.GetAck(); a != nil {
		out.Ack = &service.SubscriptionAck{ID: a.GetSubscriptionId(), Servers: ServerAcksOf(a.GetServers())}
	}
	return out
}

// ServerAcksToProto are acks as mcpd.v1 sends them.
func ServerAcksToProto(acks []service.ServerAck) []*mcpdv1.SubscriptionServerAck {
	out := make([]*mcpdv1.SubscriptionServerAck, 0, len(acks))
	for _, a := range acks {
		out = append(out, &mcpdv1.SubscriptionServerAck{
			Server:               a.Server,
			Era:                  a.Era,
			ToolsListChanged:     a.ToolsListChanged,
			PromptsListChanged:   a.PromptsListChanged,
			ResourcesListChanged: a.ResourcesListChanged,
			ResourceUris:         a.URIs,
			LogMessages:          a.Logs,
			ServerState:          a.State,
			Error:                a.Error,
		})
	}
	return out
}

// ServerAcksOf are acks as the service gives them.
func ServerAcksOf(acks []*mcpdv1.SubscriptionServerAck) []service.ServerAck {
	out := make([]service.ServerAck, 0, len(acks))
	for _, a := range acks {
		out = append(out, service.ServerAck{
			Server:               a.GetServer(),
			Era:                  a.GetEra(),
			ToolsListChanged:     a.GetToolsListChanged(),
			PromptsListChanged:   a.GetPromptsListChanged(),
			ResourcesListChanged: a.GetResourcesListChanged(),
			URIs:                 a.GetResourceUris(),
			Logs:                 a.GetLogMessages(),
			State:                a.GetServerState(),
			Error:                a.GetError(),
		})
	}
	return out
}
