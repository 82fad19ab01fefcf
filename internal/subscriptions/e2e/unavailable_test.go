package e2e

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// crashLoopingDaemon serves "doomed", whose every process exits on a
// resources/subscribe, and drives it into its crash loop (3 exits, 1 s
// cool-down) with one app's subscription, which ends with the error; it
// returns the daemon, a client and the server's state.
func crashLoopingDaemon(t *testing.T) (*daemon, mcpdv1.McpdClient, func() supervisor.State) {
	t.Helper()
	d := cooldownDaemon(t, time.Second)
	c, _ := d.dial()
	status := func() supervisor.State { return d.state("doomed") }
	first, _ := subscribe(t, c, doomedURI, true)
	<-first.done
	if s := status(); s != supervisor.StateCrashLoop {
		t.Fatalf("state = %s, want crashloop", s)
	}
	return d, c, status
}

// An app subscribes while the server is crash-looping (its acknowledgement
// says so) and leaves; the cool-down ends (the server is stopped, which no
// lifecycle event announces). The next app's subscription is new demand: it
// starts the server and is acknowledged by it, not answered with what the
// upstream knew before.
func TestSubscribeAfterCrashLoopStartsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d, c, status := crashLoopingDaemon(t)

	tools := &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ToolsListChanged: true}
	held, _ := subscribe(t, c, tools, true)
	if a := held.ack.GetServers()[0]; a.GetError() == "" {
		t.Fatalf("ack during the crash loop = %v, want an error", a)
	}
	held.close()
	waitFor(t, "the stream to close", func() bool { return d.streams() == 0 })
	waitFor(t, "the cool-down to end", func() bool { return status() == supervisor.StateStopped })

	w, _ := subscribe(t, c, tools, true)
	if a := w.ack.GetServers()[0]; a.GetError() != "" || a.GetEra() != "legacy" || !a.GetToolsListChanged() {
		t.Fatalf("ack after the cool-down = %v, want the running legacy server's", a)
	}
	if s := status(); s != supervisor.StateReady {
		t.Fatalf("state = %s, want ready (started for the subscription)", s)
	}
}

// An app that stopped reading lags: its stream has ended, so it no longer
// holds the server's upstream subscription (the URI is unsubscribed at
// once), though it stays listed as lagged until the app reads the lagged
// event.
func TestLaggedAppReleasesItsSubscription(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d := newDaemon(t, supervisor.Options{
		Specs:                   []supervisor.Spec{fakeSpec("s", "legacy")},
		SubscriptionQueueEvents: 4,
	})
	// A small fixed flow-control window, so gRPC itself cannot absorb the flood.
	c, _ := d.dial(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	stalled, resume := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{"fake://r/"}}, false)
	// Updates of one URI coalesce in the queue: they fill gRPC's window
	// until the server blocks in sending to the stalled app, which then
	// takes nothing from its queue for two bursts in a row.
	delivered := func() uint64 { return d.sup.Subscriptions().Streams()[0].Queue.Delivered }
	for still := 0; still < 2; {
		before := delivered()
		d.callTool("s", "burst", `{"n":1000}`)
		if delivered() == before {
			still++
		} else {
			still = 0
		}
	}
	// 100 URIs: more than the queue can coalesce into.
	d.callTool("s", "burst", `{"n":100,"uris":100}`)
	lagged := func() bool {
		streams := d.sup.Subscriptions().Streams()
		return len(streams) == 1 && streams[0].Queue.Lagged
	}
	if !lagged() {
		t.Fatalf("streams = %+v, want one, lagged", d.sup.Subscriptions().Streams())
	}
	waitFor(t, "resources/unsubscribe", func() bool { return d.stderrCount("s", "recv resources/unsubscribe") == 1 })
	if !lagged() {
		t.Fatal("the lagged stream is no longer listed before its app read the lagged event")
	}
	close(resume)
	<-stalled.done
	evs, err := stalled.snapshot()
	if err != nil || len(evs) == 0 || evs[len(evs)-1].GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED {
		t.Fatalf("stream ended with %v after %d events, want a lagged event last", err, len(evs))
	}
	waitFor(t, "the stream to close", func() bool { return d.streams() == 0 })
	if n := d.stderrCount("s", "recv resources/subscribe"); n != 1 {
		t.Fatalf("resources/subscribe sent %d times, want 1", n)
	}
}

// A stream opened during a crash loop stays open (its acknowledgement says
// why the server cannot serve it) and is demand: when the cool-down ends,
// the server is started for it without any other app asking.
func TestStreamOpenedDuringCrashLoopStartsServerAfterCooldown(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	_, c, status := crashLoopingDaemon(t)
	// Tool list changes need no resources/subscribe: the server can serve them.
	held, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ToolsListChanged: true}, true)
	defer held.close()
	if a := held.ack.GetServers()[0]; a.GetError() == "" {
		t.Fatalf("ack during the crash loop = %v, want an error", a)
	}
	waitFor(t, "the server to be started for the open stream after the cool-down", func() bool {
		return status() == supervisor.StateReady
	})
	select {
	case <-held.done:
		t.Fatal("the stream opened during the crash loop ended")
	default:
	}
}

// A server stuck in its handshake is not waited for once its only
// subscriber left: it is not started again and again for nobody, and it
// ends stopped.
func TestStuckHandshakeNotRestartedAfterSubscriberLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	mute := fakeSpec("mute", "hanginit")
	mute.Protocol = "legacy" // its initialize is never answered
	d := newDaemon(t, supervisor.Options{
		Specs:            []supervisor.Spec{mute},
		HandshakeTimeout: 200 * time.Millisecond,
	})
	c, _ := d.dial()
	// The app leaves while its acknowledgement still waits for the server.
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{"mute"}, ToolsListChanged: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to start for the stream", func() bool { return d.state("mute") == supervisor.StateStarting })
	cancel()
	waitFor(t, "the stream to close", func() bool { return d.streams() == 0 })
	waitFor(t, "the server to end stopped", func() bool { return d.state("mute") == supervisor.StateStopped })
	st, err := d.sup.ServerStatus("mute")
	if err != nil {
		t.Fatal(err)
	}
	// Ten handshake timeouts later it was not started again.
	time.Sleep(2 * time.Second)
	again, err := d.sup.ServerStatus("mute")
	if err != nil {
		t.Fatal(err)
	}
	if again.State != supervisor.StateStopped || again.Restarts != st.Restarts {
		t.Errorf("after its subscriber left: %s with %d restarts, then %s with %d", st.State, st.Restarts, again.State, again.Restarts)
	}
}
