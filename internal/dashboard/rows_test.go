package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// waitChanges waits until the page's value of js (a string) has changed n
// times: the page updated itself at least n times.
func (b *browser) waitChanges(what, js string, n int) {
	b.t.Helper()
	for i := 0; i < n; i++ {
		v, _ := json.Marshal(evalT[string](b, js))
		b.waitJS(what, fmt.Sprintf("(%s) !== %s", js, v))
	}
}

// in is the browser for subtest t, which its failures end.
func (b *browser) in(t *testing.T) *browser { return &browser{t: t, ctx: b.ctx} }

// mouse sends a left-button press or release at x, y.
func (b *browser) mouse(typ input.DispatchMouseEventType, x, y float64) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.MouseEvent(typ, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1))); err != nil {
		b.t.Fatalf("mouse %s at %.0f,%.0f: %v", typ, x, y, err)
	}
}

// hold presses the mouse on the element of js, runs during while the
// button is down, and releases it where it was pressed: a click, if the
// element under the pointer outlived during.
func (b *browser) hold(js string, during func()) {
	b.t.Helper()
	b.waitJS(js, js)
	// The centre of the element, once it is the element found there
	// (the page may still be scrolling).
	at := fmt.Sprintf(`(() => { const e = %s, r = e.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
		return e.contains(document.elementFromPoint(x, y)) ? [x, y] : null; })()`, js)
	b.waitJS("the pointer over "+js, at)
	pos := evalT[[]float64](b, at)
	b.mouse(input.DispatchMouseEventTypeMousePressed, pos[0], pos[1])
	during()
	// A layout that moved the element from under the pointer is no test
	// of the updates.
	if !evalT[bool](b, fmt.Sprintf("!!%s?.contains(document.elementFromPoint(%v, %v))", js, pos[0], pos[1])) {
		b.t.Fatalf("the layout moved %s from under the pointer\npage:\n%s", js, b.page())
	}
	b.mouse(input.DispatchMouseEventTypeMouseReleased, pos[0], pos[1])
}

// uptime is the JS of the text of alpha's uptime, which ticks every second.
var uptime = row("alpha") + ".cells[4].firstChild.textContent"

// TestBrowserRowsKept checks that the page updates the server table and
// the server panel in place: a row, its buttons and the panel's buttons
// are the same elements across countdown ticks and live state changes, a
// button keeps the keyboard focus, and a click whose press and release
// straddle updates lands on the button pressed.
func TestBrowserRowsKept(t *testing.T) {
	crash := filepath.Join(t.TempDir(), "crash")
	if err := os.WriteFile(crash, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, args := fakemcp.Command()
	h := newHarness(t, config.Server{Name: "flaky", Command: cmd, Args: args, RequestTimeout: 30 * time.Second,
		Env: map[string]string{fakemcp.EnvMode: "legacy", fakemcp.EnvCrashWhile: crash}})
	b := newBrowser(t, h)
	b.waitJS("the servers listed", row("alpha")+"?.dataset.state == 'ready' && "+row("flaky")+"?.dataset.state == 'stopped'")
	b.waitJS("live updates", "document.getElementById('live').classList.contains('on')")

	t.Run("row, buttons and focus kept across updates", func(t *testing.T) {
		b := b.in(t)
		b.do(`(() => { const r = ` + row("alpha") + `; r.__kept = "row"; const o = r.querySelector("button"); o.__kept = "open"; o.focus(); })()`)
		b.waitChanges("alpha's uptime ticking", uptime, 2)
		old := h.status("alpha").Pid
		if err := syscall.Kill(int(old), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		b.waitJS("alpha ready with a new pid", fmt.Sprintf("%s?.dataset.state == 'ready' && %s.dataset.pid != '%d' && %s.dataset.pid != '0'", row("alpha"), row("alpha"), old, row("alpha")))
		b.waitChanges("alpha's uptime ticking", uptime, 2)
		if got := evalT[string](b, row("alpha")+".__kept || ''"); got != "row" {
			t.Fatal("alpha's row was replaced")
		}
		if got := evalT[string](b, row("alpha")+".querySelector('button').__kept || ''"); got != "open" {
			t.Fatal("alpha's Open button was replaced")
		}
		if got := evalT[string](b, "document.activeElement.__kept || document.activeElement.outerHTML"); got != "open" {
			t.Fatalf("the focus moved from alpha's Open button to %s", got)
		}
		if n := evalT[int](b, "document.querySelectorAll('#servers tbody tr').length"); n != 4 {
			t.Fatalf("%d rows, want 4", n)
		}
	})

	t.Run("a click held across updates opens the panel", func(t *testing.T) {
		b := b.in(t)
		b.hold(row("flaky")+"?.querySelector('button')", func() {
			b.waitChanges("alpha's uptime ticking", uptime, 2)
		})
		b.waitJS("flaky's panel", `document.querySelector('#detail .head h2')?.textContent == 'flaky'`)
	})

	t.Run("a click held during a crash loop restarts", func(t *testing.T) {
		b := b.in(t)
		b.do(`document.querySelector('#detail button.restart').__kept = "restart"`)
		b.click("#detail button.start")
		// The child crashes on every start: its states stream in until
		// the crash loop, whose countdown ticks.
		b.waitJS("flaky crash-looping", row("flaky")+"?.dataset.state == 'crashloop' && "+row("flaky")+".querySelector('.reason')?.textContent.includes('crash loop')")
		if activity := evalT[string](b, "document.getElementById('activity').textContent"); !strings.Contains(activity, "flaky exited") {
			t.Fatalf("activity %q: want flaky's exits", activity)
		}
		if err := os.Remove(crash); err != nil {
			t.Fatal(err)
		}
		pill := row("flaky") + ".querySelector('.pill').textContent"
		b.hold(`document.querySelector('#detail button.restart')`, func() {
			b.waitChanges("flaky's crash-loop countdown", pill, 2)
		})
		b.waitJS("flaky ready", row("flaky")+"?.dataset.state == 'ready' && "+row("flaky")+".dataset.pid != '0'")
		b.waitJS("the restart done", `document.getElementById('activity').textContent.includes('restart flaky: done')`)
		if got := evalT[string](b, `document.querySelector('#detail button.restart').__kept || ''`); got != "restart" {
			t.Fatal("the panel's Restart button was replaced")
		}
	})
}

// TestBrowserPanelKept checks that a click on the server panel's button
// held across a state change of its server lands: the panel's head is
// updated in place, not rebuilt.
func TestBrowserPanelKept(t *testing.T) {
	h := newHarness(t)
	b := newBrowser(t, h)
	b.waitJS("beta listed stopped", row("beta")+"?.dataset.state == 'stopped'")
	b.waitJS("live updates", "document.getElementById('live').classList.contains('on')")
	b.click(`#servers tr[data-server="beta"] button`)
	b.waitJS("beta's panel", `document.querySelector('#detail .head h2')?.textContent == 'beta'`)
	// The panel opens on its tools, whose list starts a lazy server: move
	// to the logs, which start nothing, and stop beta again if it started.
	b.click(`#detail .tabs button[data-tab="logs"]`)
	b.waitJS("the logs tab", `document.querySelector('#detail .tabs button[data-tab="logs"]').classList.contains('active')`)
	if _, err := h.srv.StopServer(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
	b.waitJS("beta stopped in its panel", `document.querySelector('#detail .head .pill').textContent == 'stopped'`)
	b.do(`document.querySelector('#detail button.restart').__kept = "restart"`)
	var started int64
	b.hold(`document.querySelector('#detail button.restart')`, func() {
		st, err := h.srv.StartServer(context.Background(), "beta")
		if err != nil {
			t.Fatal(err)
		}
		started = int64(st.Pid)
		b.waitJS("beta ready in its panel", `document.querySelector('#detail .head .pill').textContent == 'ready'`)
	})
	b.waitJS("the restart done", `document.getElementById('activity').textContent.includes('restart beta: done')`)
	b.waitJS("beta ready with a new pid", fmt.Sprintf("%s?.dataset.state == 'ready' && %s.dataset.pid != '%d' && %s.dataset.pid != '0'", row("beta"), row("beta"), started, row("beta")))
	if got := evalT[string](b, `document.querySelector('#detail button.restart').__kept || ''`); got != "restart" {
		t.Fatal("the panel's Restart button was replaced")
	}
}
