package api

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// Subscribe streams the events an app asked for: first the
// acknowledgement, then events as they come, until the app cancels (nil),
// the stream lags (lagged event, then nil) or fails (error event, then
// UNAVAILABLE).
func (s *Server) Subscribe(req *mcpdv1.SubscribeRequest, stream grpc.ServerStreamingServer[mcpdv1.SubscriptionEvent]) error {
	plain := uncompressed(stream.Context())
	return s.svc.Subscribe(stream.Context(), apiconv.WatchOf(req), func(ack service.SubscriptionEvent) error {
		return stream.Send(apiconv.SubscriptionEventToProto(ack))
	}, func(ev *subscriptions.Event) error {
		return sendEvent(stream, ev, plain)
	})
}

// sendEvent sends ev on stream. An event delivered to several streams is
// encoded once, by the first of them, and the others send the same bytes;
// shared says the stream's messages are not compressed, as the shared
// encoding is not (a stream whose app compresses encodes its own).
func sendEvent(stream grpc.ServerStream, ev *subscriptions.Event, shared bool) error {
	if ev.Memo == nil || !shared {
		return stream.SendMsg(eventToProto(ev))
	}
	pm, _ := ev.Memo.Get(func() any {
		pm := new(grpc.PreparedMsg)
		if pm.Encode(stream, eventToProto(ev)) != nil {
			return nil
		}
		return pm
	}).(*grpc.PreparedMsg)
	if pm == nil {
		return stream.SendMsg(eventToProto(ev))
	}
	return stream.SendMsg(pm)
}

// uncompressed reports whether the stream of a handler's ctx sends its
// messages uncompressed (gRPC answers with the app's request compressor
// when this binary has it registered).
func uncompressed(ctx context.Context) bool {
	sc, ok := grpc.ServerTransportStreamFromContext(ctx).(interface{ SendCompress() string })
	if !ok {
		return false
	}
	name := sc.SendCompress()
	return name == "" || name == encoding.Identity
}

// UpdateSubscription adds or removes resource URIs of an open stream.
func (s *Server) UpdateSubscription(ctx context.Context, req *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	acks, err := s.svc.UpdateSubscription(ctx, service.SubscriptionUpdate{
		ID: req.GetSubscriptionId(), Add: req.GetAddResourceUris(), Remove: req.GetRemoveResourceUris()})
	if err != nil {
		return nil, err
	}
	return &mcpdv1.UpdateSubscriptionResponse{Servers: acksToProto(acks)}, nil
}

// subscriptionStatus lists the open streams for GetStatus.
func (s *Server) subscriptionStatus() []*mcpdv1.SubscriptionStatus {
	m, err := s.svc.Subscriptions()
	if err != nil {
		return nil
	}
	var out []*mcpdv1.SubscriptionStatus
	for _, st := range m.Streams() {
		out = append(out, &mcpdv1.SubscriptionStatus{
			SubscriptionId:     st.ID,
			AppName:            st.App.Name,
			AppVersion:         st.App.Version,
			AppPid:             int64(st.App.Pid),
			Servers:            st.Servers,
			ResourceUris:       int64(st.URIs),
			CreatedUnixMs:      st.Created.UnixMilli(),
			Queued:             int64(st.Queue.Queued),
			QueuedBytes:        int64(st.Queue.Bytes),
			Delivered:          st.Queue.Delivered,
			Coalesced:          st.Queue.Coalesced,
			Dropped:            st.Queue.Dropped,
			Lagged:             st.Queue.Lagged,
			DroppedLogMessages: st.Queue.LogsDropped,
		})
	}
	return out
}

// acksToProto are the service's acks as mcpd.v1 sends them.
func acksToProto(acks []service.ServerAck) []*mcpdv1.SubscriptionServerAck {
	return apiconv.ServerAcksToProto(acks)
}

// eventToProto is ev as mcpd.v1 sends it: through the service's event,
// so that each conversion is written once (subevents.go, apiconv).
func eventToProto(ev *subscriptions.Event) *mcpdv1.SubscriptionEvent {
	return apiconv.SubscriptionEventToProto(core.EventToService(ev))
}
