package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// failoverModel is served by the dashboard test's broken upstream, which
// answers 500, and then by its fallback.
const failoverModel = "gpt-4o-failover"

// updateScreenshotEnv, set to 1, makes TestDashboardInBrowser rewrite
// docs/dashboard.png.
const updateScreenshotEnv = "SWITCHYARD_UPDATE_SCREENSHOT"

// screenshotDirEnv, set to a directory, makes TestDashboardInBrowser save
// there a full-page screenshot at each width it checks the layout at
// (dashboard-1280.png, dashboard-1920.png), to look at.
const screenshotDirEnv = "SWITCHYARD_DASHBOARD_SHOTS"

// layoutWidths are the window widths the dashboard's layout is checked at.
var layoutWidths = []int64{1280, 1920}

// chromiumPath returns the first Chromium-family browser on PATH, or "".
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// shiftClock is the wall clock plus an offset the test moves forward, so
// that the gateway's five-minute traffic window can be emptied at once while
// real timers, latencies and the mocks keep real time.
type shiftClock struct{ offset atomic.Int64 }

var _ clock.Clock = (*shiftClock)(nil)

func (c *shiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *shiftClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *shiftClock) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

// Skip moves the clock forward by d.
func (c *shiftClock) Skip(d time.Duration) { c.offset.Add(int64(d)) }

// traffic sends chat requests (every fourth one streamed) from a few
// workers until stopped. Pause waits for the requests in flight and holds
// new ones back until the returned resume is called.
type traffic struct {
	gate   sync.RWMutex // held for reading by each request, for writing by pause
	cancel context.CancelFunc
	done   sync.WaitGroup
	sent   atomic.Int64
}

func startTraffic(e *env, workers int, every time.Duration) *traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &traffic{cancel: cancel}
	for w := range workers {
		tr.done.Add(1)
		go func() {
			defer tr.done.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				stream := (i+w)%4 == 0
				body := fmt.Sprintf(`{"model":"gpt-4o","stream":%t,"messages":[{"role":"user","content":"hello %d"}]}`, stream, i)
				tr.gate.RLock()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+chatPath, strings.NewReader(body))
				if err == nil {
					req.Header.Set("Authorization", "Bearer "+testKey)
					req.Header.Set("Content-Type", "application/json")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						tr.sent.Add(1)
					}
				}
				tr.gate.RUnlock()
			}
		}()
	}
	return tr
}

func (tr *traffic) pause() (resume func()) {
	tr.gate.Lock()
	return tr.gate.Unlock
}

func (tr *traffic) stop() {
	tr.cancel()
	tr.done.Wait()
}

// browser is a headless Chromium tab for a dashboard test. Its helpers
// fail the test, with the page's text where it helps, when something is
// not as expected; problems collects what the page reported (exceptions,
// console errors, CSP violations).
type browser struct {
	t   *testing.T
	tab context.Context

	mu       sync.Mutex // guards problems
	problems []string
}

// newBrowser starts Chromium (skipping the test when there is none) with a
// 1280×800 window; it is closed at the end of the test or after timeout.
func newBrowser(t *testing.T, timeout time.Duration) *browser {
	t.Helper()
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no chromium binary on PATH: skipping the browser test (CI installs chromium; locally: apt-get install chromium)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	b := &browser{t: t, tab: tab}
	if err := chromedp.Listen(tab, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			// A 401 answer is logged by the network source: that one is expected.
			if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
				b.problems = append(b.problems, string(ev.Entry.Source)+": "+ev.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatalf("starting chromium %s: %v", bin, err)
	}
	return b
}

func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.tab, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitFor polls js until it is true, for up to limit.
func (b *browser) waitFor(what, js string, limit time.Duration) {
	b.t.Helper()
	if _, err := chromedp.Run(b.tab, chromedp.Poll[bool](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit))); err != nil {
		text, _ := chromedp.Run(b.tab, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("waiting until %s: %v\npage text:\n%s", what, err, text)
	}
}

// wait is waitFor with 30 s.
func (b *browser) wait(what, js string) {
	b.t.Helper()
	b.waitFor(what, js, 30*time.Second)
}

func (b *browser) eval(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.tab, chromedp.Evaluate[string](js))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// signIn opens the dashboard of the gateway at url and signs in.
func (b *browser) signIn(url string) {
	b.t.Helper()
	b.do("opening the dashboard", chromedp.Navigate(url+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("signing in", chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Click(chromedp.ID("login-button")))
	b.wait("the dashboard shows", `!document.getElementById('app').hidden`)
}

// noProblems fails the test if the page reported any.
func (b *browser) noProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Fatalf("the page reported problems:\n%s", strings.Join(b.problems, "\n"))
	}
}

// decisionsOverflow is the JavaScript that lists, joined by "; ", what
// of the decisions table overflows: the table beyond its container, or a
// cell's content beyond the cell ("" when nothing does).
const decisionsOverflow = `(() => {
  const t = document.getElementById('decisions'), box = t.parentElement, out = [];
  if (t.scrollWidth > box.clientWidth) out.push('table ' + t.scrollWidth + 'px in ' + box.clientWidth + 'px');
  t.querySelectorAll('td').forEach((td, i) => {
    if (td.scrollWidth > td.clientWidth) out.push('cell ' + i + ' (' + td.className + ') ' + td.scrollWidth + 'px in ' + td.clientWidth + 'px');
  });
  return out.join('; ');
})()`

// shareColours is the JavaScript for the computed colours of the share
// bars' two segments (actual, configured) in every row, and of the
// legend's two swatches: "actual / configured | legend-actual / legend-configured".
const shareColours = `(() => {
  const bg = (e) => e ? getComputedStyle(e).backgroundColor : 'missing';
  const bars = Array.from(document.querySelectorAll('#routes .share .bar')).map((b) =>
    bg(b.querySelector('.fill.actual')) + ' / ' + bg(b.querySelector('.fill.configured')));
  const legend = bg(document.querySelector('#route-legend .swatch.actual')) + ' / ' + bg(document.querySelector('#route-legend .swatch.configured'));
  return Array.from(new Set(bars)).join(', ') + ' | ' + legend;
})()`

// checkLayout sets the window's width and checks that the decisions table
// fits its card with no cell cut off, and that the share bars show actual
// and configured in two colours, the legend's; with SWITCHYARD_DASHBOARD_SHOTS
// it saves a full-page screenshot there.
func (b *browser) checkLayout(width int64) {
	b.t.Helper()
	b.do(fmt.Sprintf("resizing to %d px", width), chromedp.EmulateViewport(width, 900))
	b.wait(fmt.Sprintf("the layout at %d px", width), fmt.Sprintf(`document.documentElement.clientWidth === %d`, width))
	if got := b.eval(decisionsOverflow); got != "" {
		b.t.Errorf("at %d px the decisions table overflows: %s", width, got)
	}
	got := b.eval(shareColours)
	bars, legend, _ := strings.Cut(got, " | ")
	actual, configured, _ := strings.Cut(bars, " / ")
	if strings.Contains(bars, "), ") || actual == configured || bars != legend || strings.Contains(got, "missing") {
		b.t.Errorf("at %d px the share bars' colours (actual / configured) are %q, the legend's %q: want one pair of two colours, the legend's", width, bars, legend)
	}
	if dir := os.Getenv(screenshotDirEnv); dir != "" {
		png, err := chromedp.Run(b.tab, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatalf("taking the screenshot: %v", err)
		}
		out := filepath.Join(dir, fmt.Sprintf("dashboard-%d.png", width))
		if err := os.WriteFile(out, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		b.t.Logf("wrote %s", out)
	}
}

// routeShare is the JavaScript for the actual share the route table of
// model shows for upstream ("" or undefined while it has no row).
func routeShare(model, upstream string) string {
	return fmt.Sprintf(`(document.querySelector('#routes tr[data-model="%s"][data-upstream="%s"] .share-actual') || {}).textContent`, model, upstream)
}

// TestDashboardInBrowser drives the dashboard in headless Chromium against a
// gateway with live traffic: it signs in, sees every upstream, switches one
// off with a click and watches its share of its route fall to 0%, edits a
// weight inline, opens the view of a request that failed over and sees both
// attempts, checks the layout at 1280 and 1920 px (the decisions table fits,
// no cell cut off; the share bars in the legend's two colours), and checks
// the page raised no error (CSP included) and kept the token in
// sessionStorage only. With SWITCHYARD_UPDATE_SCREENSHOT=1 it saves a
// full-page screenshot at 1280 px to docs/dashboard.png.
func TestDashboardInBrowser(t *testing.T) {
	update := os.Getenv(updateScreenshotEnv) == "1"
	timeout := 90 * time.Second
	if update {
		timeout = 3 * time.Minute
	}
	b := newBrowser(t, timeout)
	clk := &shiftClock{}
	_, mainURL := startMock(t, "openai-main", mock.Behavior{Latency: 25 * time.Millisecond, TTFT: 40 * time.Millisecond, TPS: 400})
	_, backupURL := startMock(t, "openai-backup", mock.Behavior{Latency: 60 * time.Millisecond, TTFT: 90 * time.Millisecond, TPS: 200})
	_, azureURL := startMock(t, "azure-east", mock.Behavior{Latency: 35 * time.Millisecond, TTFT: 55 * time.Millisecond, TPS: 300, ErrorRate: 0.02})
	_, fallbackURL := startMock(t, "anthropic-fallback", mock.Behavior{Latency: 80 * time.Millisecond})
	// broken serves only failoverModel, whose requests then fail over to fallback.
	_, brokenURL := startMock(t, "broken", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	ups := []config.Upstream{
		upstreamAt("openai-main", config.ProviderOpenAI, mainURL, 0, "gpt-4o"),
		upstreamAt("openai-backup", config.ProviderOpenAI, backupURL, 0, "gpt-4o"),
		upstreamAt("azure-east", config.ProviderOpenAICompatible, azureURL, 0, "gpt-4o"),
		upstreamAt("fallback", config.ProviderOpenAICompatible, fallbackURL, 1, "gpt-4o", failoverModel),
		upstreamAt("broken", config.ProviderOpenAICompatible, brokenURL, 0, failoverModel),
	}
	ups[0].Weight, ups[1].Weight, ups[2].Weight = 3, 2, 2
	ups[0].RateLimit.RPM, ups[0].RateLimit.TPM = 1500, 200000
	ups[2].MaxConcurrency, ups[2].Queue.Enabled = 8, true
	collector := startReceiver(t, &receiver{}, "http") // the request view shows the trace id
	e := startGateway(t, spec{upstreams: ups, clock: clk, edit: func(c *config.Config) {
		withAdmin(c)
		c.Tracing.OTLPEndpoint = collector
	}})
	tr := startTraffic(e, 2, 150*time.Millisecond) // about 13 requests/s
	defer tr.stop()
	share := func(name string) string { return routeShare("gpt-4o", name) }

	// A wrong token is refused, the right one signs in.
	b.do("opening the dashboard", chromedp.Navigate(e.URL+"/admin/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.do("signing in with a wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-the-token"), chromedp.Click(chromedp.ID("login-button")))
	b.wait("the wrong token is refused", `document.getElementById('login-error').textContent.includes('refused') && document.getElementById('app').hidden`)
	b.do("signing in", chromedp.SendKeys(chromedp.ID("token"), adminToken), chromedp.Click(chromedp.ID("login-button")))
	b.wait("every upstream has a row", `document.querySelectorAll('#upstreams tbody tr[data-upstream]').length === 5`)
	rows := b.eval(`Array.from(document.querySelectorAll('#upstreams tbody tr[data-upstream]')).map(r => r.dataset.upstream).join(',')`)
	if rows != "azure-east,broken,openai-backup,openai-main,fallback" {
		t.Fatalf("rows %s, want tier 0 by name, then tier 1", rows)
	}
	if tiers := b.eval(`Array.from(document.querySelectorAll('#upstreams tr.tier')).map(r => r.textContent.split(' · ')[0]).join(',')`); tiers != "Tier 0,Tier 1" {
		t.Fatalf("tier headers %q", tiers)
	}
	if got := b.eval(`sessionStorage.getItem('switchyard.adminToken') + '|' + localStorage.length + '|' + document.cookie`); got != adminToken+"|0|" {
		t.Fatalf("token storage %q, want it in sessionStorage only", got)
	}
	b.wait("the decisions table fills", `document.querySelectorAll('#decisions tbody td.order').length > 0`)

	// Switch openai-backup off with a click; once the window holds only
	// traffic after the change, its share of gpt-4o is 0%.
	b.wait("openai-backup gets a share", share("openai-backup")+` !== undefined && `+share("openai-backup")+` !== '0%'`)
	b.do("switching openai-backup off", chromedp.Click(chromedp.CSS(`button.toggle[data-upstream="openai-backup"]`)))
	b.wait("the toggle shows off", `document.querySelector('button.toggle[data-upstream="openai-backup"]').getAttribute('aria-checked') === 'false'`)
	if r := e.mustAdmin(t, "GET", "/upstreams/openai-backup", "", http.StatusOK); !strings.Contains(string(r.body), `"active":false`) {
		t.Fatalf("after the click the upstream is %s", r.body)
	}
	resume := tr.pause()
	clk.Skip(6 * time.Minute) // the traffic before the click leaves the window
	resume()
	b.wait("openai-backup's share falls to 0% while the others take the traffic",
		share("openai-backup")+` === '0%' && !['0%', '', undefined].includes(`+share("openai-main")+`)`)
	for _, sel := range []string{`#upstreams tr[data-upstream="openai-backup"]`, `#routes tr[data-model="gpt-4o"][data-upstream="openai-backup"]`} {
		if got := b.eval(`document.querySelector('` + sel + `').className`); !strings.Contains(got, "inactive") {
			t.Fatalf("the inactive row %s has class %q", sel, got)
		}
	}

	// An inline weight edit is a PATCH.
	weight := chromedp.CSS(`input.weight[data-upstream="azure-east"]`)
	// Focused, the field is no longer refreshed by the polls; empty it, then type.
	b.eval(`(() => { const i = document.querySelector('input.weight[data-upstream="azure-east"]'); i.focus(); i.value = ''; return 'ok'; })()`)
	b.do("editing azure-east's weight", chromedp.SendKeys(weight, "4\r"))
	b.wait("the new weight is in force", `document.querySelector('#upstreams tr[data-upstream="azure-east"] td:nth-child(4)').title.startsWith('weight 4 ')`)
	if r := e.mustAdmin(t, "GET", "/upstreams/azure-east", "", http.StatusOK); !strings.Contains(string(r.body), `"weight":4`) {
		t.Fatalf("after the edit the upstream is %s", r.body)
	}

	// A request that failed over opens, from its row of recent decisions,
	// a view with both attempts on the timeline. Traffic waits meanwhile,
	// so that the row stays among the twelve shown.
	resume = tr.pause()
	const traceID = "5b8efff798038103d269b633813fc60c"
	r := e.post(t, chatPath, `{"model":"`+failoverModel+`","messages":[{"role":"user","content":"hi"}]}`,
		"Traceparent", "00-"+traceID+"-eee19b7ec3c1b174-01")
	id := r.header.Get("X-Request-Id")
	if r.status != http.StatusOK || r.header.Get("X-Switchyard-Attempts") != "2" {
		t.Fatalf("the failover request: status %d after %s attempts: %s", r.status, r.header.Get("X-Switchyard-Attempts"), r.body)
	}
	row := fmt.Sprintf(`#decisions tr[data-request-id="%s"]`, id)
	b.wait("the failed-over request has a row", fmt.Sprintf(`!!document.querySelector('%s')`, row))
	b.do("opening the request", chromedp.Click(chromedp.CSS(row)))
	b.wait("the view shows both timed attempts", `!document.getElementById('request-view').hidden && `+
		`document.querySelectorAll('#rv-timeline .attempt:not(.untimed)').length === 2`)
	attempts := b.eval(`Array.from(document.querySelectorAll('#rv-timeline .attempt')).map(a => ` +
		`a.dataset.upstream + ':' + a.dataset.outcome + ':' + (a.querySelector('.tag.won') ? 'won' : '') + ':' + ` +
		`(a.querySelector('.span').getBoundingClientRect().width > 0) + ':' + !!a.querySelector('.first-byte')).join(' ')`)
	if want := "broken:server_error::true:false fallback:success:won:true:true"; attempts != want {
		t.Fatalf("attempts on the timeline %q, want %q", attempts, want)
	}
	if got := b.eval(`document.getElementById('rv-id').textContent`); got != id {
		t.Fatalf("the view is of request %q, want %q", got, id)
	}
	if got := b.eval(`document.getElementById('rv-facts').textContent`); !strings.Contains(got, "Status200") || !strings.Contains(got, "Translationnone") ||
		!strings.Contains(got, "Trace"+traceID) {
		t.Fatalf("the view's facts %q lack the status, the translation or the client's trace id", got)
	}
	b.do("closing the view", chromedp.Click(chromedp.ID("rv-close")))
	b.wait("the view is closed", `document.getElementById('request-view').hidden`)
	resume()

	b.wait("a decision lists skipped upstreams", `Array.from(document.querySelectorAll('#decisions td.reasons')).some((td) => td.textContent.includes('inactive'))`)
	for _, w := range layoutWidths {
		b.checkLayout(w)
	}
	b.do("resizing back", chromedp.EmulateViewport(1280, 800))

	if update {
		// Let the chart collect a minute of history first.
		b.waitFor("the chart has history", `(() => { const l = document.querySelector('#routes svg polyline'); return !!l && l.points.length >= 30; })()`, 2*time.Minute)
		png, err := chromedp.Run(b.tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("taking the screenshot: %v", err)
		}
		out := filepath.Join("..", "..", "docs", "dashboard.png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", out, len(png))
	}

	b.noProblems()
	if tr.sent.Load() == 0 {
		t.Fatal("no traffic was sent")
	}
}
