package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// cooldownDaemon runs "doomed", a legacy fake that exits on every
// resources/subscribe, with a crash loop of 3 exits and a short cool-down.
func cooldownDaemon(t *testing.T, cooldown time.Duration) *daemon {
	return newDaemon(t, supervisor.Options{
		Specs:        []supervisor.Spec{fakeSpec("doomed", "legacy,exitonsubscribe")},
		CrashLoopMax: 3, CrashLoopCooldown: cooldown,
		BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	})
}

func (d *daemon) state(server string) supervisor.State {
	st, err := d.sup.ServerStatus(server)
	if err != nil {
		d.t.Fatal(err)
	}
	return st.State
}

// startedCount counts the "started" state events a state watcher saw.
func startedCount(w *watcher) int {
	return w.count(func(ev *mcpdv1.SubscriptionEvent) bool {
		return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE && ev.GetState() == "started"
	})
}

var doomedURI = &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ResourceUris: []string{"fake://hello"}}

// A stream opened during a crash loop that crashes the server again (its
// resources/subscribe kills every child) gets the server started once the
// cool-down ends, which costs one more full crash loop (CrashLoopMax
// starts) and ends the stream; the next cool-down, with no stream left,
// starts nothing.
func TestCooldownStartIsBoundedByTheCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const cooldown = 500 * time.Millisecond
	d := cooldownDaemon(t, cooldown)
	c, _ := d.dial()
	// Watching state only is not demand: it starts nothing.
	states, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ServerState: true}, true)
	first, _ := subscribe(t, c, doomedURI, true)
	<-first.done
	if s := d.state("doomed"); s != supervisor.StateCrashLoop {
		t.Fatalf("state = %s, want crashloop", s)
	}
	if n := startedCount(states); n != 3 {
		t.Fatalf("%d starts before the first crash loop, want 3", n)
	}
	held, _ := subscribe(t, c, doomedURI, true)
	if a := held.ack.GetServers()[0]; a.GetError() == "" {
		t.Fatalf("ack during the crash loop = %v, want an error", a)
	}
	// The cool-down starts the server for it; it crash-loops again.
	waitFor(t, "the held stream to end", func() bool {
		select {
		case <-held.done:
			return true
		default:
			return false
		}
	})
	evs, _ := held.snapshot()
	if len(evs) == 0 || evs[len(evs)-1].GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR {
		t.Fatalf("held stream ended with %v, want an error event last", evs)
	}
	waitFor(t, "the second crash loop", func() bool {
		return d.state("doomed") == supervisor.StateCrashLoop && d.streams() == 1
	})
	if n := startedCount(states); n != 6 {
		t.Fatalf("%d starts after the second crash loop, want 6", n)
	}
	waitFor(t, "the second cool-down to end", func() bool { return d.state("doomed") == supervisor.StateStopped })
	if n := startedCount(states); n != 6 {
		t.Fatalf("%d starts after the second cool-down, want still 6 (no stream wants the server)", n)
	}
}

// The cool-down never starts a server the operator stopped, or one a
// reload disabled, even with a stream waiting for it; the operator's start
// (or enabling it again) serves that stream.
func TestCooldownLeavesStoppedAndDisabledServersAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	for _, how := range []string{"stop", "disable"} {
		t.Run(how, func(t *testing.T) {
			const cooldown = 300 * time.Millisecond
			d := cooldownDaemon(t, cooldown)
			c, _ := d.dial()
			states, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ServerState: true}, true)
			first, _ := subscribe(t, c, doomedURI, true)
			<-first.done
			// Tool list changes need no resources/subscribe: this stream
			// is served as soon as the server runs.
			held, _ := subscribe(t, c, &mcpdv1.SubscribeRequest{Servers: []string{"doomed"}, ToolsListChanged: true}, true)
			if a := held.ack.GetServers()[0]; a.GetError() == "" {
				t.Fatalf("ack during the crash loop = %v, want an error", a)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			specs := d.sup.Specs()
			setDisabled := func(v bool) {
				t.Helper()
				for i := range specs {
					specs[i].Disabled = v
				}
				if _, err := d.sup.Apply(slices.Clone(specs)); err != nil {
					t.Fatal(err)
				}
			}
			switch how {
			case "stop":
				if _, err := d.sup.Stop(ctx, "doomed"); err != nil {
					t.Fatal(err)
				}
			case "disable":
				setDisabled(true)
			}
			waitFor(t, "the server to be stopped", func() bool { return d.state("doomed") == supervisor.StateStopped })
			before := startedCount(states)
			// Nothing to await: the start must not happen. Give the
			// cool-down timer, had it been left running, time to fire.
			time.Sleep(3 * cooldown)
			if s, n := d.state("doomed"), startedCount(states); s != supervisor.StateStopped || n != before {
				t.Fatalf("after the cool-down: state %s, %d starts (was %d); want stopped, no start", s, n, before)
			}
			select {
			case <-held.done:
				t.Fatal("the waiting stream ended")
			default:
			}
			switch how {
			case "stop":
				if _, err := d.sup.Start(ctx, "doomed"); err != nil {
					t.Fatal(err)
				}
			case "disable":
				setDisabled(false)
			}
			waitFor(t, "the server to run again", func() bool { return d.state("doomed") == supervisor.StateReady })
		})
	}
}
