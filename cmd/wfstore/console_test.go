package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// testConsole is a console over a fixture store, driven in-process.
type testConsole struct {
	t  *testing.T
	fx consoleStore
	c  *console
	s  *workflow.Store
}

func newTestConsole(t *testing.T, cfg consoleConfig) *testConsole {
	t.Helper()
	fx := newConsoleStore(t)
	b, err := sqlite.Open(context.Background(), fx.Path)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cfg.Store = workflow.New(b)
	cfg.Now = func() time.Time { return fx.Now }
	c, err := newConsole(cfg)
	require.NoError(t, err)
	return &testConsole{t: t, fx: fx, c: c, s: cfg.Store}
}

// do serves one request as a browser on the console's own origin would
// send it, after edit (if any) changed it.
func (tc *testConsole) do(method, target string, form url.Values, edit func(*http.Request)) *httptest.ResponseRecorder {
	tc.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1:8080"
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://127.0.0.1:8080")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: tc.c.csrf})
	}
	if edit != nil {
		edit(r)
	}
	w := httptest.NewRecorder()
	tc.c.ServeHTTP(w, r)
	return w
}

func (tc *testConsole) get(target string) (int, string) {
	tc.t.Helper()
	w := tc.do(http.MethodGet, target, nil, nil)
	return w.Code, w.Body.String()
}

// post submits an action's form with the console's form token.
func (tc *testConsole) post(action string, form url.Values) *httptest.ResponseRecorder {
	tc.t.Helper()
	form.Set("csrf", tc.c.csrf)
	return tc.do(http.MethodPost, "/action/"+action, form, nil)
}

// state is every run's and attempt's durable state, to show an action
// wrote nothing.
func (tc *testConsole) state() string {
	tc.t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	require.NoError(tc.t, tc.s.Engine().Backend().View(ctx, func(r backend.ReadTx) error {
		runs, err := r.Runs(ctx, backend.RunQuery{Limit: 1000})
		if err != nil {
			return err
		}
		for _, run := range runs {
			fmt.Fprintf(&sb, "%s %s upd=%d seq=%d cap=%d cancel=%d\n", run.ID, run.Status, run.UpdatedMS, run.LastEventSeq, run.Limits.NodeExecutionCap, run.CancelRequestedMS)
		}
		atts, err := r.Attempts(ctx, backend.AttemptQuery{Limit: 1000})
		for _, a := range atts {
			fmt.Fprintf(&sb, "%s %s\n", a.Identity, a.Status)
		}
		return err
	}))
	return sb.String()
}

func TestConsolePagesRender(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{})
	fx := tc.fx

	code, body := tc.get("/runs")
	require.Equal(t, http.StatusOK, code, body)
	for _, id := range []string{fx.Running, fx.Failed, fx.Cancelled, fx.Retrying, fx.Repair, fx.Fenced, fx.Child} {
		assert.Contains(t, body, ">"+id+"</a>")
	}
	assert.Regexp(t, `failed <span class="count">2</span>`, body)
	assert.Regexp(t, `running <span class="count">3</span>`, body)
	assert.Contains(t, body, "retry due at ")

	code, body = tc.get("/runs?status=failed")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, ">"+fx.Failed+"</a>")
	assert.Contains(t, body, ">"+fx.Retrying+"</a>")
	assert.NotContains(t, body, ">"+fx.Running+"</a>")
	assert.Contains(t, body, "retry due at ", "a failed run with a schedule says when its retry is due")

	code, body = tc.get("/run?id=" + fx.Running)
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{`id="activations"`, ">reserve<", ">notify<", ">pending<", `id="attempts"`, ">admitted<", ">recorded<",
		`id="leases"`, `id="schedules"`, `id="events"`, "run_created", "activation_created", "attempt_admitted",
		"<dt>node_id</dt><dd>reserve</dd>", `href="/tree?root=` + fx.Running + `"`, `id="action-cancel"`, `id="action-cancel-tree"`, `id="action-allowance"`} {
		assert.Contains(t, body, want)
	}

	code, body = tc.get("/run?id=" + fx.Retrying)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "retry due at ")
	assert.Contains(t, body, "owner_reported_retryable")
	assert.Contains(t, body, "/action/retry?run="+fx.Retrying+"&amp;node=fetch&amp;activation=a1&amp;attempt=1")

	code, body = tc.get("/run?id=" + url.QueryEscape(fx.Repair))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "/action/repair?id="+fx.RepairIdentity)

	code, body = tc.get("/tree?root=" + fx.Running)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, ">"+fx.Child+"</a>")
	code, body = tc.get("/tree?root=" + url.QueryEscape(fx.Child))
	assert.Equal(t, http.StatusBadRequest, code, "a child is not a root")
	assert.Contains(t, body, "not a composition root")

	code, body = tc.get("/stuck?older=1m")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, ">"+fx.Running+"</a>")
	assert.Contains(t, body, ">reserve<")
	code, body = tc.get("/stuck?older=24h")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "No attempt admitted for longer than 24h0m0s")

	code, body = tc.get("/attempt?id=" + fx.RepairIdentity)
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{fx.RepairIdentity, "repair_required", "the owner may have been called", "timeout after send", "matches its checksum", `id="action-repair"`} {
		assert.Contains(t, body, want)
	}

	for _, target := range []string{"/action/cancel?run=" + fx.Running, "/action/cancel-tree?run=" + fx.Running,
		"/action/allowance?run=" + fx.Failed, "/action/retry?run=" + fx.Failed + "&node=charge&activation=a1&attempt=1",
		"/action/repair?id=" + fx.RepairIdentity} {
		code, body = tc.get(target)
		require.Equal(t, http.StatusOK, code, target)
		assert.Contains(t, body, `<form method="post"`, target)
		assert.Contains(t, body, `name="csrf" value="`+tc.c.csrf+`"`, target)
	}
	_, body = tc.get("/action/repair?id=" + fx.RepairIdentity)
	assert.Contains(t, body, `name="confirm_identity"`, "repair asks for the identity to be typed")
	assert.Contains(t, body, "timeout after send", "repair shows the evidence")

	w := tc.do(http.MethodGet, "/static/console.css", nil, nil)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), ".timeline")
	w = tc.do(http.MethodGet, "/", nil, nil)
	assert.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/runs", w.Header().Get("Location"))
	code, _ = tc.get("/nowhere")
	assert.Equal(t, http.StatusNotFound, code)
}

func TestConsolePagesAreBoundedAndPaged(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{PageSize: 2})
	var seen []string
	next := "/runs"
	for next != "" {
		code, body := tc.get(next)
		require.Equal(t, http.StatusOK, code, body)
		rows := strings.Count(body, `class="run-row"`)
		assert.LessOrEqual(t, rows, 2)
		for _, part := range strings.Split(body, `data-run="`)[1:] {
			seen = append(seen, part[:strings.IndexByte(part, '"')])
		}
		next = ""
		if i := strings.Index(body, `id="next" href="`); i >= 0 {
			rest := body[i+len(`id="next" href="`):]
			next = strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
		}
	}
	assert.Len(t, seen, 7, "every run once: %v", seen)

	// The event timeline pages by sequence number.
	code, body := tc.get("/run?id=" + tc.fx.Running)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2, strings.Count(body, `<span class="seq">`))
	assert.Contains(t, body, `id="events-next" href="/run?id=`+tc.fx.Running+`&amp;ev=2"`)
	_, body = tc.get("/run?id=" + tc.fx.Running + "&ev=2")
	assert.Contains(t, body, `<span class="seq">#3</span>`)
	assert.NotContains(t, body, `<span class="seq">#1</span>`)

	code, _ = tc.get("/runs?after=!!")
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = tc.get("/run?id=" + tc.fx.Running + "&att=bm9wZQ")
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestConsoleRefusesAForeignHost(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{Hosts: []string{"console.internal"}})
	before := tc.state()
	for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.nip.io:8080", ""} {
		w := tc.do(http.MethodGet, "/runs", nil, func(r *http.Request) { r.Host = host })
		assert.Equal(t, http.StatusMisdirectedRequest, w.Code, host)
		assert.Contains(t, w.Body.String(), "DNS rebinding protection")
		assert.NotContains(t, w.Body.String(), tc.fx.Running, "nothing of the store is shown")
		w = tc.do(http.MethodPost, "/action/cancel", url.Values{"run": {tc.fx.Running}, "csrf": {tc.c.csrf}}, func(r *http.Request) { r.Host = host })
		assert.Equal(t, http.StatusMisdirectedRequest, w.Code, host)
	}
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:8080", "console.internal:443", "CONSOLE.internal"} {
		w := tc.do(http.MethodGet, "/runs", nil, func(r *http.Request) { r.Host = host })
		assert.Equal(t, http.StatusOK, w.Code, host)
	}
	assert.Equal(t, before, tc.state())
}

func TestConsoleRefusesCrossSiteAndTokenlessForms(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{})
	before := tc.state()
	form := func() url.Values { return url.Values{"run": {tc.fx.Running}, "csrf": {tc.c.csrf}} }
	cases := map[string]func(*http.Request){
		"no form token": func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(url.Values{"run": {tc.fx.Running}}.Encode()))
		},
		"wrong form token": func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(url.Values{"run": {tc.fx.Running}, "csrf": {strings.Repeat("0", 64)}}.Encode()))
		},
		"no cookie":          func(r *http.Request) { r.Header.Del("Cookie") },
		"cross-site fetch":   func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"foreign origin":     func(r *http.Request) { r.Header.Del("Sec-Fetch-Site"); r.Header.Set("Origin", "https://evil.example") },
		"same-site subframe": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
	}
	for name, edit := range cases {
		w := tc.do(http.MethodPost, "/action/cancel", form(), edit)
		assert.Equal(t, http.StatusForbidden, w.Code, name)
		assert.Contains(t, w.Body.String(), "Nothing was changed", name)
	}
	assert.Equal(t, before, tc.state(), "no refused form wrote anything")

	// A confirmation page is only a GET: it writes nothing either.
	code, _ := tc.get("/action/cancel?run=" + tc.fx.Running)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, before, tc.state())
	w := tc.do(http.MethodGet, "/runs", nil, nil)
	ck := w.Result().Cookies()
	require.Len(t, ck, 1)
	assert.Equal(t, csrfCookie, ck[0].Name)
	assert.Equal(t, http.SameSiteStrictMode, ck[0].SameSite)
	assert.True(t, ck[0].HttpOnly)
	assert.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'")
}

func TestConsoleBadRequestsShowAnErrorPageAndWriteNothing(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{})
	fx := tc.fx
	before := tc.state()
	for _, target := range []string{"/run?id=order-9999", "/tree?root=order-9999", "/attempt?id=" + strings.Repeat("ab", 32),
		"/action/cancel?run=order-9999", "/action/allowance?run=order-9999", "/action/retry?run=order-9999&node=x&activation=a1&attempt=1",
		"/action/repair?id=nope"} {
		code, body := tc.get(target)
		assert.Equal(t, http.StatusNotFound, code, target)
		assert.Contains(t, body, `id="error"`, target)
	}
	for _, target := range []string{"/run?id=", "/run?id=%20", "/tree?root=", "/attempt?id=", "/stuck?older=soon", "/action/retry?run=" + fx.Failed + "&node=charge&activation=a1&attempt=zero"} {
		code, body := tc.get(target)
		assert.Equal(t, http.StatusBadRequest, code, target)
		assert.Contains(t, body, `id="error"`, target)
	}
	posts := []struct {
		action string
		form   url.Values
		code   int
		says   string
	}{
		{"cancel", url.Values{"run": {"order-9999"}}, http.StatusNotFound, "not found"},
		{"cancel", url.Values{"run": {""}}, http.StatusBadRequest, "run id"},
		{"cancel-tree", url.Values{"run": {fx.Child}}, http.StatusConflict, "not a composition root"},
		{"cancel", url.Values{"run": {fx.Failed}}, http.StatusConflict, "cannot be cancelled"},
		{"allowance", url.Values{"run": {"order-9999"}, "expected": {"1000"}, "target": {"2000"}}, http.StatusNotFound, "not found"},
		{"allowance", url.Values{"run": {fx.Failed}, "expected": {"1000"}, "target": {"many"}}, http.StatusBadRequest, "whole numbers"},
		{"allowance", url.Values{"run": {fx.Failed}, "expected": {"999"}, "target": {"2000"}}, http.StatusConflict, "not the expected 999"},
		{"allowance", url.Values{"run": {fx.Failed}, "expected": {"1000"}, "target": {"10"}}, http.StatusBadRequest, "must exceed"},
		{"allowance", url.Values{"run": {fx.Fenced}, "expected": {"1000"}, "target": {"2000"}}, http.StatusConflict, "execution authority"},
		{"retry", url.Values{"run": {fx.Failed}, "node": {"nope"}, "activation": {"a1"}, "attempt": {"1"}}, http.StatusNotFound, "not found"},
		{"retry", url.Values{"run": {fx.Failed}, "node": {"charge"}, "activation": {"a1"}, "attempt": {"7"}}, http.StatusConflict, "latest failed attempt"},
		{"retry", url.Values{"run": {fx.Cancelled}, "node": {"notify"}, "activation": {"a1"}, "attempt": {"1"}}, http.StatusConflict, "not eligible for node retry (cancelled)"},
		{"repair", url.Values{"id": {fx.RepairIdentity}, "action": {"confirm_failed"}, "confirm_identity": {fx.RepairIdentity[:12]}}, http.StatusBadRequest, "typed identity does not match"},
		{"repair", url.Values{"id": {fx.RepairIdentity}, "action": {"explode"}, "confirm_identity": {fx.RepairIdentity}}, http.StatusBadRequest, "unknown action"},
		{"repair", url.Values{"id": {fx.RepairIdentity}, "action": {"confirm_succeeded"}, "output": {"{not json"}, "confirm_identity": {fx.RepairIdentity}}, http.StatusBadRequest, ""},
		{"repair", url.Values{"id": {"nope"}, "action": {"confirm_failed"}, "confirm_identity": {"nope"}}, http.StatusNotFound, "not found"},
	}
	for _, p := range posts {
		w := tc.post(p.action, p.form)
		assert.Equal(t, p.code, w.Code, "%s %v: %s", p.action, p.form, w.Body.String())
		assert.Contains(t, w.Body.String(), `id="error"`)
		assert.Contains(t, w.Body.String(), p.says, "%s %v", p.action, p.form)
	}
	assert.Equal(t, before, tc.state(), "no refused action wrote anything")

	// The console says why it will not raise a fenced run's allowance
	// before anyone confirms.
	_, body := tc.get("/action/allowance?run=" + fx.Fenced)
	assert.Contains(t, body, `id="refusal"`)
	assert.NotContains(t, body, `<form method="post"`)
}

func TestConsoleActionsChangeDurableState(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{})
	fx := tc.fx
	ctx := context.Background()
	run := func(id string) workflow.Run {
		r, err := tc.s.GetRun(ctx, id)
		require.NoError(t, err)
		return r
	}
	follow := func(w *httptest.ResponseRecorder, done string) string {
		t.Helper()
		require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
		loc := w.Header().Get("Location")
		assert.Contains(t, loc, "&done="+done)
		code, body := tc.get(loc)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `id="done"`)
		return body
	}

	// Cancel one run: its intent is durable and the page shows it.
	body := follow(tc.post("cancel", url.Values{"run": {fx.Fenced}}), "cancel")
	assert.Contains(t, body, "Cancellation requested.")
	assert.False(t, run(fx.Fenced).CancelRequestedAt.IsZero())
	assert.Equal(t, workflow.RunCancelled, run(fx.Fenced).Status, "nothing of it was active")
	assert.Contains(t, body, `id="run-status">cancelled<`)

	// Raise an allowance.
	follow(tc.post("allowance", url.Values{"run": {fx.Failed}, "expected": {"1000"}, "target": {"1500"}}), "allowance")
	assert.Equal(t, int64(1500), run(fx.Failed).Limits.NodeExecutionCap)

	// Retry a failed node: the run runs again with the node pending.
	follow(tc.post("retry", url.Values{"run": {fx.Failed}, "node": {"charge"}, "activation": {"a1"}, "attempt": {"1"}}), "retry")
	assert.Equal(t, workflow.RunRunning, run(fx.Failed).Status)
	act, err := tc.s.GetActivation(ctx, workflow.ActivationKey{RunID: fx.Failed, NodeID: "charge", ActivationID: "a1"})
	require.NoError(t, err)
	assert.Equal(t, workflow.ActivationPending, act.Status)

	// Repair the repair_required attempt as failed, typing its identity.
	follow(tc.post("repair", url.Values{"id": {fx.RepairIdentity}, "action": {"confirm_failed"}, "confirm_identity": {fx.RepairIdentity}}), "repair")
	att, err := tc.s.GetAttempt(ctx, fx.RepairIdentity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptFailed, att.Status)
	assert.Equal(t, workflow.RunFailed, run(fx.Repair).Status)

	// Cancel the whole tree: the root and its child have the intent.
	follow(tc.post("cancel-tree", url.Values{"run": {fx.Running}}), "tree")
	assert.False(t, run(fx.Running).CancelRequestedAt.IsZero())
	assert.False(t, run(fx.Child).CancelRequestedAt.IsZero())
	_, body = tc.get("/run?id=" + fx.Running)
	assert.NotContains(t, body, `id="action-cancel"`, "a run with cancellation requested offers no cancel")
	assert.Contains(t, body, "cancellation requested")
}

func TestConsoleTokenGuardsEveryPage(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t, consoleConfig{Token: "s3cret-token"})
	w := tc.do(http.MethodGet, "/runs", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.NotContains(t, w.Body.String(), tc.fx.Running)
	w = tc.do(http.MethodGet, "/runs?token=wrong", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	w = tc.do(http.MethodGet, "/run?id="+tc.fx.Running+"&token=s3cret-token", nil, nil)
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/run?id="+tc.fx.Running, w.Header().Get("Location"), "the token leaves the address bar")
	var tok *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == tokenCookie {
			tok = c
		}
	}
	require.NotNil(t, tok)
	assert.True(t, tok.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, tok.SameSite)
	w = tc.do(http.MethodGet, "/runs", nil, func(r *http.Request) { r.AddCookie(tok) })
	assert.Equal(t, http.StatusOK, w.Code)
	w = tc.do(http.MethodGet, "/runs", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token") })
	assert.Equal(t, http.StatusOK, w.Code)
	before := tc.state()
	w = tc.do(http.MethodPost, "/action/cancel", url.Values{"run": {tc.fx.Running}, "csrf": {tc.c.csrf}}, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Equal(t, before, tc.state())
}

func TestConsoleCommandFlagsAndServing(t *testing.T) {
	t.Parallel()
	fx := newConsoleStore(t)
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--db", fx.Path, "--listen", "0.0.0.0:0"}, "needs --token"},
		{[]string{"--db", fx.Path, "--listen", "192.0.2.1:0"}, "needs --token"},
		{[]string{"--db", fx.Path, "--listen", "0.0.0.0:0", "--token", "t"}, "--host"},
		{[]string{"--db", fx.Path, "--listen", "nonsense"}, "host:port"},
		{[]string{"--db", fx.Path, "--tls-cert", "c.pem"}, "go together"},
		{[]string{"--db", fx.Path, "--page", "0"}, "--page"},
		{[]string{"--backend", "sqlit", "--db", fx.Path}, "unknown --backend"},
	} {
		var stderr strings.Builder
		err := consoleCmd(ctx, c.args, io.Discard, &stderr)
		assert.ErrorIs(t, err, errUsage, "%v", c.args)
		assert.Contains(t, stderr.String(), c.says, "%v", c.args)
	}
	err := consoleCmd(ctx, []string{"--db", missing, "--listen", "127.0.0.1:0"}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "never creates a store")
	_, statErr := os.Stat(missing)
	assert.True(t, errors.Is(statErr, os.ErrNotExist), "no file was created")

	// Served on a loopback port until cancelled.
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- consoleCmd(cctx, []string{"--db", fx.Path, "--listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	addr := line[strings.Index(line, "http://"):]
	addr = strings.TrimSpace(addr)
	resp, err := http.Get(addr + "runs?status=cancelled")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), fx.Cancelled)
	cancel()
	var ie *interruptedError
	assert.ErrorAs(t, <-done, &ie)
}

// selfSignedCert writes a certificate and key for 127.0.0.1 under dir.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wfstore console test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile
}

func TestConsoleServesTLSWithASecureTokenCookie(t *testing.T) {
	t.Parallel()
	fx := newConsoleStore(t)
	cert, key := selfSignedCert(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- consoleCmd(ctx, []string{"--db", fx.Path, "--listen", "127.0.0.1:0", "--token", "tls-token",
			"--tls-cert", cert, "--tls-key", key}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	base := strings.TrimSpace(line[strings.Index(line, "https://"):])
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the test's own self-signed certificate
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get(base + "runs")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, err = client.Get(base + "runs?token=tls-token")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var tok *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookie {
			tok = c
		}
	}
	require.NotNil(t, tok)
	assert.True(t, tok.Secure, "over TLS the token cookie is Secure")
	req, _ := http.NewRequest(http.MethodGet, base+"runs", nil)
	req.AddCookie(tok)
	resp, err = client.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), fx.Failed)
	cancel()
	var ie *interruptedError
	assert.ErrorAs(t, <-done, &ie)
}

func TestConsoleBinaryServesUntilInterrupted(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	fx := newConsoleStore(t)
	cmd := exec.Command(bin, "console", "--db", fx.Path, "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("no serving line: %v (stderr %q)", err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	assert.Regexp(t, `^wfstore console: serving \S+orders\.db on http://127\.0\.0\.1:\d+/$`, strings.TrimSpace(line))
	resp, err := http.Get(strings.TrimSpace(line[strings.Index(line, "http://"):]) + "run?id=" + fx.Failed)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), "card declined")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	_ = cmd.Wait()
	assert.Equal(t, 130, cmd.ProcessState.ExitCode())
	assert.Equal(t, []string{"wfstore console: interrupted by SIGINT (Ctrl-C); the console stopped; every action it took had committed or changed nothing"}, lines(stderr.String()))
}
