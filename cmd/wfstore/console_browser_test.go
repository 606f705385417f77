package main

import (
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// chromiumPath is the browser the end-to-end test drives: $WFSTORE_CHROMIUM
// or Debian's /usr/bin/chromium. Without one the test skips, unless
// WFSTORE_REQUIRE_BROWSER=1 (as CI sets), which makes it fail.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("WFSTORE_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		msg := "NO BROWSER: the console's end-to-end test needs Chromium at " + p +
			" (apt-get install chromium, or set WFSTORE_CHROMIUM): " + err.Error()
		if os.Getenv("WFSTORE_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " (WFSTORE_REQUIRE_BROWSER=1)")
		}
		t.Skip("!!! SKIPPED: " + msg)
	}
	return p
}

// TestConsoleInARealBrowser drives headless Chromium against the console
// serving a real SQLite store with a failed, a cancelled and a running
// run: every page renders, the status filter works, cancelling a run
// changes durable state and the run page shows it, and a bad id shows the
// error page and writes nothing. With WFSTORE_CONSOLE_SCREENSHOTS=DIR it
// saves DIR/console-runs.png, DIR/console-run.png and
// DIR/console-repair.png.
func TestConsoleInARealBrowser(t *testing.T) {
	browser := chromiumPath(t)
	start := time.Now()
	fx := newConsoleStore(t)
	b, err := sqlite.Open(context.Background(), fx.Path)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	c, err := newConsole(consoleConfig{Store: s})
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	defer srv.Close()
	tc := &testConsole{t: t, fx: fx, c: c, s: s}

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	shots := os.Getenv("WFSTORE_CONSOLE_SCREENSHOTS")
	shoot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if shots == "" {
				return nil
			}
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	u := func(path string) string { return srv.URL + path }
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}

	// The runs page lists every run with its status.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/runs")), chromedp.WaitVisible(chromedp.CSS("#runs")), shoot("console-runs.png")))
	runs := text("#runs")
	for _, id := range []string{fx.Running, fx.Failed, fx.Cancelled, fx.Retrying, fx.Repair} {
		assert.Contains(t, runs, id)
	}
	assert.Contains(t, runs, "retry due at")

	// The status filter: clicking "failed" lists the failed runs only.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#status-filter a.st-failed`)),
		chromedp.WaitVisible(chromedp.CSS(`#status-filter a.st-failed.selected`))))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(loc, "/runs?status=failed"), loc)
	failed := text("#runs tbody")
	assert.Contains(t, failed, fx.Failed)
	assert.Contains(t, failed, fx.Retrying)
	assert.NotContains(t, failed, fx.Running)
	assert.NotContains(t, failed, fx.Cancelled)

	// A run's page, its tree, the stuck attempts, an attempt's evidence.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/run?id="+fx.Running)), chromedp.WaitVisible(chromedp.CSS("#events")), shoot("console-run.png")))
	assert.Contains(t, text("#attempts"), "admitted")
	assert.Contains(t, text("#activations"), "notify")
	assert.Contains(t, text("#events"), "attempt_admitted")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#tree-link")), chromedp.WaitVisible(chromedp.CSS("#tree"))))
	assert.Contains(t, text("#tree"), fx.Child)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/stuck?older=1m")), chromedp.WaitVisible(chromedp.CSS("#stuck"))))
	assert.Contains(t, text("#stuck"), "reserve")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/attempt?id="+fx.RepairIdentity)), chromedp.WaitVisible(chromedp.CSS("#evidence"))))
	assert.Contains(t, text("#evidence"), "timeout after send")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/action/repair?id="+fx.RepairIdentity)), chromedp.WaitVisible(chromedp.CSS("#confirm-form")), shoot("console-repair.png")))
	assert.Contains(t, text("#confirm-form"), "Type the attempt's dispatch identity")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/tree?root="+url.QueryEscape(fx.Running))), chromedp.WaitVisible(chromedp.CSS("#tree"))))

	// Cancel a run: confirm, then the run page shows it and it is durable.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/run?id="+fx.Fenced)), chromedp.WaitVisible(chromedp.CSS("#action-cancel")),
		chromedp.Click(chromedp.CSS("#action-cancel")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#done"))))
	assert.Equal(t, "cancelled", text("#run-status"))
	run, err := s.GetRun(context.Background(), fx.Fenced)
	require.NoError(t, err)
	assert.Equal(t, workflow.RunCancelled, run.Status)
	assert.False(t, run.CancelRequestedAt.IsZero())

	// A bad id: the error page, and nothing written, also when a form is
	// posted with an id that does not exist.
	before := tc.state()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/run?id=order-9999")), chromedp.WaitVisible(chromedp.CSS("#error"))))
	assert.Contains(t, text("#error"), "404 Not Found")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u("/action/cancel?run="+fx.Running)), chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.SetAttributeValue(chromedp.CSS(`#confirm-form input[name="run"]`), "value", "order-9999"),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#error"))))
	assert.Contains(t, text("#error"), "404 Not Found")
	assert.Equal(t, before, tc.state(), "the bad id wrote nothing")

	t.Logf("browser test took %s", time.Since(start).Round(time.Millisecond))
}
