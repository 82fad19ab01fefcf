package main

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// plotsDir is where the committed plots are, relative to the repository's
// root: "make bench-plots" runs the scale section with -plots plotsDir, and
// BENCHMARKS.md links them there.
const plotsDir = "docs/bench"

// series is one line of a plot: points (x, y) and its name.
type series struct {
	name string
	x, y []float64
}

// scalePlots draws the scale section's curves as SVG files, by name.
func scalePlots(sc *scaleReport) map[string]string {
	out := map[string]string{}
	if len(sc.Apps) > 0 {
		var idle, sub, p50, p99, cpu series
		idle.name, sub.name, p50.name, p99.name, cpu.name = "idle KiB/app", "subscribed KiB/app", "fan-out p50 ms", "fan-out p99 ms", "CPU µs/delivery"
		for _, a := range sc.Apps {
			x := float64(a.Apps)
			idle.x, idle.y = append(idle.x, x), append(idle.y, a.IdlePerApp/1024)
			sub.x, sub.y = append(sub.x, x), append(sub.y, a.SubPerApp/1024)
			p50.x, p50.y = append(p50.x, x), append(p50.y, a.P50/1000)
			p99.x, p99.y = append(p99.x, x), append(p99.y, a.P99/1000)
			cpu.x, cpu.y = append(cpu.x, x), append(cpu.y, a.CPUPerDelivery)
		}
		out["scale-apps.svg"] = plotSVG("mcpd cost per connected app", "apps (log)", []series{idle, sub, p50, p99, cpu})
	}
	if len(sc.Servers) > 0 {
		var rss, ready, st, reload series
		rss.name, ready.name, st.name, reload.name = "idle RSS MiB", "start→socket ms", "status p50 ms ×10", "reload ms"
		for _, s := range sc.Servers {
			x := float64(s.Servers)
			rss.x, rss.y = append(rss.x, x), append(rss.y, float64(s.IdleRSS)/(1<<20))
			ready.x, ready.y = append(ready.x, x), append(ready.y, s.ReadyMs)
			st.x, st.y = append(st.x, x), append(st.y, s.StatusP50/100)
			reload.x, reload.y = append(reload.x, x), append(reload.y, s.ReloadMs)
		}
		out["scale-servers.svg"] = plotSVG("mcpd with configured servers", "servers (log)", []series{rss, ready, st, reload})
	}
	if len(sc.Subs) > 0 {
		out["scale-subscriptions.svg"] = plotSVG("watched URIs over subscribed apps", "URIs (log)", subsSeries(sc.Subs))
	}
	if len(sc.Sizes) > 0 {
		var m, d series
		m.name, d.name = "through mcpd MB/s", "direct MB/s"
		for _, s := range sc.Sizes {
			if s.Error != "" {
				continue
			}
			x := float64(s.Bytes)
			m.x, m.y = append(m.x, x), append(m.y, s.McpdMB)
			d.x, d.y = append(d.x, x), append(d.y, s.Direct)
		}
		out["scale-result-size.svg"] = plotSVG("echo throughput by result size", "bytes (log)", []series{m, d})
	}
	return out
}

// plotColors are the lines' colours, in order.
var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// plotSVG draws ss on a log-scaled x axis and a linear y axis from 0.
func plotSVG(title, xLabel string, ss []series) string {
	const h, left, top, bottom = 360.0, 60.0, 30.0, 40.0
	// The legend is right of the plot: room for its longest name (about
	// 6.5 px a character at font-size 11, after 35 px of line).
	longest := 0
	for _, s := range ss {
		longest = max(longest, utf8.RuneCountInString(s.name))
	}
	right := max(190.0, 35+6.5*float64(longest)+10)
	w := 450 + right
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i, x := range s.x {
			minX, maxX, maxY = math.Min(minX, x), math.Max(maxX, x), math.Max(maxY, s.y[i])
		}
	}
	if maxY <= 0 {
		maxY = 1
	}
	lx0, lx1 := math.Log10(minX), math.Log10(maxX)
	if lx1 == lx0 {
		lx1 = lx0 + 1
	}
	px := func(x float64) float64 { return left + (math.Log10(x)-lx0)/(lx1-lx0)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="18" font-size="13">%s</text>`+"\n", left, esc(title))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top, left, h-bottom)
	for _, x := range ss[0].x {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`, px(x), h-bottom+14, x)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (left+w-right)/2, h-6, esc(xLabel))
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.3g</text><line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n",
			left-4, py(y)+4, y, left, py(y), w-right, py(y))
	}
	for i, s := range ss {
		c := plotColors[i%len(plotColors)]
		var pts []string
		for j, x := range s.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(s.y[j])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(x), py(s.y[j]), c)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
		ly := top + 10 + float64(i)*16
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			w-right+10, ly, w-right+30, ly, c, w-right+35, ly+4, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// esc escapes text for SVG.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// subsSeries are the subscriptions curve's series, each server's apart
// (the servers in the order measured).
func subsSeries(rows []scaleSubsRow) []series {
	var out []series
	at := map[string]int{} // server → index of its first series in out
	for _, s := range rows {
		i, ok := at[s.Server]
		if !ok {
			i = len(out)
			at[s.Server] = i
			out = append(out,
				series{name: s.Server + " bytes/subscription ÷100"},
				series{name: s.Server + " subscribe µs/URI"},
				series{name: s.Server + " unsubscribe µs/URI"})
		}
		x := float64(s.URIs)
		for k, y := range []float64{s.PerSub / 100, s.SubscribeUs, s.UnsubscribeUs} {
			out[i+k].x, out[i+k].y = append(out[i+k].x, x), append(out[i+k].y, y)
		}
	}
	return out
}
