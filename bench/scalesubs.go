package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// scaleSubsRow is mcpd with uris resource URIs watched in total on one
// server, spread evenly over apps subscribed apps (added with
// UpdateSubscription, one call per app, on top of each app's
// demo://counter).
type scaleSubsRow struct {
	// Server is the target, Era the era mcpd speaks with it: a modern
	// child gets one listen with every URI per update, a legacy one a
	// resources/subscribe per URI added.
	Server string  `json:"server"`
	Era    string  `json:"era"`
	URIs   int     `json:"uris"`
	Apps   int     `json:"apps"`
	PerSub float64 `json:"rss_per_subscription_bytes"`
	// SubscribeUs and UnsubscribeUs are the wall time of the adds and of
	// the removes, per URI.
	SubscribeUs   float64 `json:"subscribe_us_per_uri"`
	UnsubscribeUs float64 `json:"unsubscribe_us_per_uri"`
	// AfterRSS is mcpd's RSS once every URI was removed again, against
	// BaseRSS before any was added.
	BaseRSS  int64 `json:"base_rss_bytes"`
	AfterRSS int64 `json:"after_remove_rss_bytes"`
}

// subApp is one subscribed app whose events are read and dropped.
type subApp struct {
	conn   *grpc.ClientConn
	client mcpdv1.McpdClient
	id     uint64
	era    string // the server's era, from the acknowledgement
	cancel context.CancelFunc
	done   chan struct{}
}

func openSubApp(ctx context.Context, d *daemon, server string, i int) (*subApp, error) {
	conn, err := dialApp(d.socket)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	a := &subApp{conn: conn, client: mcpdv1.NewMcpdClient(conn), cancel: cancel, done: make(chan struct{})}
	st, err := a.client.Subscribe(sctx, &mcpdv1.SubscribeRequest{Servers: []string{server}, ResourceUris: []string{counterURI},
		Client: &mcpdv1.ClientInfo{Name: fmt.Sprintf("mcpd-bench-sub-%d", i)}})
	var ack *mcpdv1.SubscriptionEvent
	if err == nil {
		ack, err = st.Recv()
	}
	if err != nil || ack.GetAck() == nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("subscribe app %d: %v (first event %v)", i, err, ack)
	}
	a.id = ack.GetAck().GetSubscriptionId()
	if servers := ack.GetAck().GetServers(); len(servers) > 0 {
		a.era = servers[0].GetEra()
	}
	go func() { // owned: close waits for done
		defer close(a.done)
		for {
			if _, err := st.Recv(); err != nil {
				return
			}
		}
	}()
	return a, nil
}

func (a *subApp) close() {
	a.cancel()
	<-a.done
	_ = a.conn.Close()
}

func (b *bench) scaleSubCounts() (apps int, uris []int) {
	if b.o.smoke {
		return 10, []int{10, 100}
	}
	return 100, []int{100, 1000, 10000}
}

// scaleSubs measures the subscriptions curve of each target (the demo
// server is modern, server-everything legacy), each on a fresh daemon.
func (b *bench) scaleSubs(ctx context.Context) error {
	for _, t := range b.targets() {
		if err := b.scaleSubsOf(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}

func (b *bench) scaleSubsOf(ctx context.Context, t target) error {
	b.progress("scale: subscriptions: %s", t.Name)
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, map[string]serverConfig{t.Name: {Command: t.Command, Args: t.Args}})
	if err != nil {
		return err
	}
	defer d.stop()
	if err := callEcho(ctx, d.client(), t.Name); err != nil {
		return err
	}
	if _, err := d.serverPid(ctx, t.Name); err != nil {
		return err
	}
	nApps, counts := b.scaleSubCounts()
	var apps []*subApp
	defer func() {
		for _, a := range apps {
			a.close()
		}
	}()
	for i := range nApps {
		a, err := openSubApp(ctx, d, t.Name, i)
		if err != nil {
			return err
		}
		apps = append(apps, a)
	}
	for _, u := range counts {
		row, err := scaleSubsAt(ctx, d, apps, u)
		if err != nil {
			return fmt.Errorf("%d URIs: %w", u, err)
		}
		row.Server, row.Era = t.Name, apps[0].era
		b.rep.Scale.Subs = append(b.rep.Scale.Subs, row)
	}
	return nil
}

func scaleSubsAt(ctx context.Context, d *daemon, apps []*subApp, total int) (scaleSubsRow, error) {
	row := scaleSubsRow{URIs: total, Apps: len(apps)}
	per := max(total/len(apps), 1)
	row.URIs = per * len(apps)
	uris := make([][]string, len(apps))
	for i := range apps {
		for k := range per {
			uris[i] = append(uris[i], fmt.Sprintf("demo://bench/%d/%d", i, k))
		}
	}
	var err error
	if row.BaseRSS, err = settledRSS(d.pid()); err != nil {
		return row, err
	}
	update := func(add bool) (time.Duration, error) {
		start := time.Now()
		for i, a := range apps {
			req := &mcpdv1.UpdateSubscriptionRequest{SubscriptionId: a.id}
			if add {
				req.AddResourceUris = uris[i]
			} else {
				req.RemoveResourceUris = uris[i]
			}
			if _, err := a.client.UpdateSubscription(ctx, req); err != nil {
				return 0, fmt.Errorf("update subscription of app %d: %w", i, err)
			}
		}
		return time.Since(start), nil
	}
	took, err := update(true)
	if err != nil {
		return row, err
	}
	row.SubscribeUs = us(took) / float64(row.URIs)
	full, err := settledRSS(d.pid())
	if err != nil {
		return row, err
	}
	row.PerSub = float64(full-row.BaseRSS) / float64(row.URIs)
	if took, err = update(false); err != nil {
		return row, err
	}
	row.UnsubscribeUs = us(took) / float64(row.URIs)
	row.AfterRSS, err = settledRSS(d.pid())
	return row, err
}
