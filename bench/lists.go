package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// lists is section 3: tools/list through mcpd (a cache hit once the cache
// exists) vs direct vs a bare gRPC round trip returning as many bytes.
func (b *bench) lists(ctx context.Context, d *daemon, bareSrv *bare, bareSock string, t target) error {
	b.progress("cached lists: %s", t.Name)
	dc, _, err := startDirect(ctx, b.reg, t)
	if err != nil {
		return err
	}
	defer dc.close()
	lm := &mcpdLister{client: d.client(), server: t.Name}
	listMcpd := func() error { return lm.list(ctx) }
	listDirect := func() error {
		_, err := dc.call(ctx, "tools/list", nil)
		return err
	}
	for range 20 { // warm (fills the cache)
		if err := listMcpd(); err != nil {
			return err
		}
		if err := listDirect(); err != nil {
			return err
		}
	}
	listBare := func() error { return bareSrv.blob(ctx, int64(lm.size)) }
	variants := []func() error{listDirect, listMcpd, listBare}
	fronts, err := b.startFronts(ctx, d, t, 1, "lists")
	if err != nil {
		return err
	}
	defer closeFronts(fronts)
	sizes := make([]int, len(fronts))
	for i, f := range fronts {
		variants = append(variants, func() (err error) { sizes[i], err = f.list(ctx); return err })
	}
	p50s, p99s, err := b.sequentialRounds(max(b.o.iters/2, 50), variants)
	if err != nil {
		return err
	}
	row := listRowOf(t.Name, lm, p50s, p99s)
	for i, f := range fronts {
		fl := frontList{Name: f.name, P50: us(medianDur(p50s[3+i])), P99: us(medianDur(p99s[3+i])), Bytes: sizes[i]}
		fl.Speedup = ratio(row.DirectP50, fl.P50)
		row.Fronts = append(row.Fronts, fl)
	}
	if row.McpdRate, row.BareRate, err = b.listRates(ctx, d, bareSock, t.Name, int64(lm.size)); err != nil {
		return err
	}
	row.RateRatio = ratio(row.McpdRate, row.BareRate)
	b.rep.Lists = append(b.rep.Lists, row)
	return nil
}

// mcpdLister lists a server's tools through mcpd and keeps the cache
// status and size of the last answer.
type mcpdLister struct {
	client mcpdv1.McpdClient
	server string
	cache  mcpdv1.CacheStatus
	size   int
}

// list lists the server's tools once, failing on any answer but one
// server's non-empty list.
func (lm *mcpdLister) list(ctx context.Context) error {
	resp, err := lm.client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: lm.server})
	if err != nil {
		return fmt.Errorf("list tools of %s through mcpd: %w", lm.server, err)
	}
	if len(resp.GetServers()) != 1 || resp.GetServers()[0].GetItemsJson() == "" {
		return fmt.Errorf("list tools of %s through mcpd: unexpected response %v", lm.server, resp)
	}
	s := resp.GetServers()[0]
	if e := s.GetError(); e != nil {
		return fmt.Errorf("list tools of %s through mcpd: mcp error %d: %s", lm.server, e.GetCode(), e.GetMessage())
	}
	lm.cache, lm.size = s.GetCache(), len(s.GetItemsJson())
	return nil
}

// sequentialRounds times every variant iters times back to back in
// b.o.rounds rounds, each round starting with another, and returns each
// variant's p50 and p99 per round.
func (b *bench) sequentialRounds(iters int, variants []func() error) (p50s, p99s [][]time.Duration, err error) {
	n := len(variants)
	p50s, p99s = make([][]time.Duration, n), make([][]time.Duration, n)
	for r := range b.o.rounds {
		for _, v := range rotate(n, r) {
			l, err := timeSequential(iters, variants[v])
			if err != nil {
				return nil, nil, err
			}
			p50s[v] = append(p50s[v], l.quantile(0.5))
			p99s[v] = append(p99s[v], l.quantile(0.99))
		}
	}
	return p50s, p99s, nil
}

// listRowOf is section 3's row of the direct, mcpd and bare variants'
// latencies (fronts and rates aside): medians of rounds.
func listRowOf(server string, lm *mcpdLister, p50s, p99s [][]time.Duration) listRow {
	row := listRow{
		Server:    server,
		Cache:     strings.TrimPrefix(lm.cache.String(), "CACHE_STATUS_"),
		DirectP50: us(medianDur(p50s[0])),
		McpdP50:   us(medianDur(p50s[1])), McpdP99: us(medianDur(p99s[1])),
		BareP50:   us(medianDur(p50s[2])),
		ListBytes: lm.size,
	}
	row.Speedup = ratio(row.DirectP50, row.McpdP50)
	row.OverBare = ratio(row.McpdP50, row.BareP50)
	row.Ceiling = ratio(row.DirectP50, row.BareP50)
	return row
}

// listClients is how many apps at once section 3's throughput uses.
const listClients = 64

// listRates is cached tools/list throughput with listClients apps, each its
// own connection, through mcpd vs a bare unary round trip of as many bytes
// (interleaved rounds, medians).
func (b *bench) listRates(ctx context.Context, d *daemon, bareSock, server string, size int64) (mcpdRate, bareRate float64, err error) {
	apps := make([]mcpdv1.McpdClient, listClients)
	bares := make([]*bare, listClients)
	for i := range listClients {
		conn, err := dialApp(d.socket) // closed at the section's end, as in throughput
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close()
		apps[i] = mcpdv1.NewMcpdClient(conn)
		bconn, err := dialFloor(bareSock)
		if err != nil {
			return 0, 0, err
		}
		defer bconn.Close()
		bares[i] = &bare{conn: bconn}
	}
	variants := []func(i int) error{
		func(i int) error {
			_, err := apps[i].ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server})
			return err
		},
		func(i int) error { return bares[i].blob(ctx, size) },
	}
	var rates [2][]float64
	for r := range b.o.rounds {
		for _, v := range rotate(len(variants), r) {
			rate, err := parallelRate(b.o.tputDur, listClients, variants[v])
			if err != nil {
				return 0, 0, err
			}
			rates[v] = append(rates[v], rate)
		}
	}
	return medianF(rates[0]), medianF(rates[1]), nil
}

// idleServers is how many lazy servers the idle/startup daemon has.
const idleServers = 10
