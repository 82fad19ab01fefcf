package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// stamped is one subscription event with the time the app received it.
type stamped struct {
	ev *mcpdv1.SubscriptionEvent
	at time.Time
}

// recoveryRounds is how many kills section 6 measures; it configures as
// many demo servers and kills each once, so that no server nears the
// crash-loop bound (5 unexpected exits in 60 s).
func (b *bench) recoveryRounds() int {
	if b.o.smoke {
		return 2
	}
	return max(b.o.rounds, 5)
}

// recovery is section 6: an app subscribed to demo://counter on a demo
// server through mcpd; SIGKILL the child; measure until the app receives
// the restarted event (sent once the subscription was re-sent to the new
// process and acknowledged), and until it receives an update triggered
// right after that event. The server's cold start (spawn + handshake of
// the same server, directly) is measured in the same rounds and
// subtracted. The lifecycle events the app receives on the way split the
// time into detection, the supervisor's restart backoff (with the spawn),
// the new child's handshake, and the re-subscription.
func (b *bench) recovery(ctx context.Context) error {
	t := b.targets()[0]
	rounds := b.recoveryRounds()
	b.progress("recovery: %s, %d rounds", t.Name, rounds)
	servers := map[string]serverConfig{}
	for i := range rounds {
		servers[fmt.Sprintf("rec%d", i)] = serverConfig{Command: t.Command, Args: t.Args}
	}
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, servers)
	if err != nil {
		return err
	}
	defer d.stop()
	var total, cold, added, firstUpdate, detect, backoff, handshake, resub, own []float64
	for r := range rounds {
		name := fmt.Sprintf("rec%d", r)
		var res recoveryRound
		var took time.Duration
		for _, v := range rotate(2, r) {
			if v == 0 {
				dc, tk, err := startDirect(ctx, b.reg, t)
				if err != nil {
					return err
				}
				dc.close()
				took = tk
				continue
			}
			if res, err = b.recoverOnce(ctx, d, name); err != nil {
				return err
			}
		}
		total = append(total, ms(res.restarted))
		cold = append(cold, ms(took))
		added = append(added, ms(res.restarted-took))
		firstUpdate = append(firstUpdate, ms(res.update))
		detect = append(detect, ms(res.restarting))
		backoff = append(backoff, ms(res.started-res.restarting))
		handshake = append(handshake, ms(res.ready-res.started))
		resub = append(resub, ms(res.restarted-res.ready))
		own = append(own, ms(res.restarting+res.restarted-res.ready))
	}
	b.rep.Recovery = &recoveryRow{
		Total: medianF(total), ColdStart: medianF(cold), Added: medianF(added),
		FirstUpdate: medianF(firstUpdate), Detect: medianF(detect), Backoff: medianF(backoff),
		Handshake: medianF(handshake), Resubscribe: medianF(resub), McpdOwn: medianF(own), Rounds: rounds,
	}
	return nil
}

// recoveryRound is one kill, as offsets from the SIGKILL to the app
// receiving each event.
type recoveryRound struct {
	restarting, started, ready, restarted, update time.Duration
}

// recoverOnce subscribes an app to server, kills its child and times the
// way back (see recovery).
func (b *bench) recoverOnce(ctx context.Context, d *daemon, server string) (recoveryRound, error) {
	var res recoveryRound
	conn, err := dialApp(d.socket)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	client := mcpdv1.NewMcpdClient(conn)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	events, err := subscribeStamped(sctx, &wg, client, server)
	if err != nil {
		return res, err
	}
	pid, err := childDelivering(ctx, d, client, events, server)
	if err != nil {
		return res, err
	}

	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return res, fmt.Errorf("kill %s (pid %d): %w", server, pid, err)
	}
	seen, err := awaitRestarted(events, killed, server, &res)
	if err != nil {
		return res, err
	}
	// Live again: an update triggered now reaches the app.
	if err := touchThroughMcpd(ctx, client, server); err != nil {
		return res, err
	}
	u, err := nextEvent(events, isRealUpdate)
	if err != nil {
		return res, fmt.Errorf("%s after the restart: %w", server, err)
	}
	res.update = u.at.Sub(killed)
	res.restarting, res.started, res.ready = seen["restarting"], seen["started"], seen["ready"]
	if res.restarting == 0 || res.started == 0 || res.ready == 0 {
		return res, fmt.Errorf("%s: lifecycle events missing after the kill (got %v)", server, seen)
	}
	if _, err := d.serverPid(ctx, server); err != nil { // record the new child
		return res, err
	}
	return res, nil
}

// subscribeStamped subscribes to server's counter resource and its state
// and, once acknowledged, passes each event with the time it arrived on
// the returned channel (closed when the stream ends) from a goroutine in
// wg that stops when ctx ends.
func subscribeStamped(ctx context.Context, wg *sync.WaitGroup, client mcpdv1.McpdClient, server string) (<-chan stamped, error) {
	st, err := client.Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{server},
		ResourceUris: []string{counterURI}, ServerState: true, Client: &mcpdv1.ClientInfo{Name: "mcpd-bench-recovery"}})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", server, err)
	}
	if ack, err := st.Recv(); err != nil || len(ack.GetAck().GetServers()) != 1 || ack.GetAck().GetServers()[0].GetError() != "" {
		return nil, fmt.Errorf("subscribe to %s: acknowledgement %v, %v", server, ack, err)
	}
	events := make(chan stamped, 256)
	wg.Go(func() {
		defer close(events)
		for {
			ev, err := st.Recv()
			if err != nil {
				return
			}
			select {
			case events <- stamped{ev, time.Now()}:
			case <-ctx.Done():
				return
			}
		}
	})
	return events, nil
}

// childDelivering returns the pid of server's child once the subscription
// delivers an update from it.
func childDelivering(ctx context.Context, d *daemon, client mcpdv1.McpdClient, events <-chan stamped, server string) (int, error) {
	pid, err := d.serverPid(ctx, server)
	if err != nil {
		return 0, err
	}
	if pid == 0 {
		return 0, fmt.Errorf("%s has no child after the subscription", server)
	}
	// Make sure the subscription delivers before the kill.
	if err := touchThroughMcpd(ctx, client, server); err != nil {
		return 0, err
	}
	if _, err := nextEvent(events, func(ev *mcpdv1.SubscriptionEvent) bool { return isRealUpdate(ev) }); err != nil {
		return 0, fmt.Errorf("%s before the kill: %w", server, err)
	}
	return pid, nil
}

// awaitRestarted reads events until the restarted event, setting
// res.restarted to its offset from killed, and returns the offset of each
// server state's first event on the way.
func awaitRestarted(events <-chan stamped, killed time.Time, server string, res *recoveryRound) (map[string]time.Duration, error) {
	seen := map[string]time.Duration{}
	for {
		s, err := nextEvent(events, func(*mcpdv1.SubscriptionEvent) bool { return true })
		if err != nil {
			return seen, fmt.Errorf("%s after the kill: %w", server, err)
		}
		off := s.at.Sub(killed)
		switch s.ev.GetKind() {
		case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE:
			if _, ok := seen[s.ev.GetState()]; !ok {
				seen[s.ev.GetState()] = off
			}
			if state := s.ev.GetState(); state == "crashloop" || state == "failed" {
				return seen, fmt.Errorf("%s went to %s: %s", server, state, s.ev.GetError())
			}
		case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED:
			res.restarted = off
		case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR, mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED:
			return seen, fmt.Errorf("%s subscription ended: %s", server, s.ev.GetError())
		}
		if res.restarted > 0 {
			return seen, nil
		}
	}
}

func isRealUpdate(ev *mcpdv1.SubscriptionEvent) bool {
	return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED && !ev.GetSynthetic() &&
		ev.GetUri() == counterURI
}

// nextEvent returns the next event matching f, skipping others.
func nextEvent(events <-chan stamped, f func(*mcpdv1.SubscriptionEvent) bool) (stamped, error) {
	timeout := time.NewTimer(eventWait)
	defer timeout.Stop()
	for {
		select {
		case s, ok := <-events:
			if !ok {
				return stamped{}, errors.New("the subscription ended")
			}
			if f(s.ev) {
				return s, nil
			}
		case <-timeout.C:
			return stamped{}, fmt.Errorf("no expected event within %s", eventWait)
		}
	}
}
