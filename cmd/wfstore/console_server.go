package main

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

//go:embed console
var consoleFiles embed.FS

// consoleConfig configures the console's HTTP handler.
type consoleConfig struct {
	Store *workflow.Store
	// Hosts are the host names (no port) the Host header may carry; the
	// loopback names are always accepted. Any other Host is refused, so a
	// page of another site whose name resolves to this address (DNS
	// rebinding) reads and changes nothing.
	Hosts []string
	// Token, when set, must accompany every request: as the cookie the
	// console sets after a visit with ?token=, or as "Authorization:
	// Bearer TOKEN".
	Token string
	// Now is the clock of the actions and of ages (default time.Now).
	Now func() time.Time
	// PageSize is the rows of each listing (default 50).
	PageSize int
	// StuckAfter is the default age past which the stuck page lists an
	// admitted attempt (default 5 minutes).
	StuckAfter time.Duration
}

// console is the web console's handler: the security checks of every
// request in ServeHTTP, then the pages and actions of its mux.
type console struct {
	cfg   consoleConfig
	store *workflow.Store
	b     backend.Backend
	hosts map[string]bool
	// csrf is this process's random form token: every action form
	// carries it in a hidden field and the console sets it as a
	// SameSite=Strict cookie; a POST must carry both.
	csrf  string
	cop   *http.CrossOriginProtection
	pages map[string]*template.Template
	mux   *http.ServeMux
}

const (
	csrfCookie  = "wfstore_console_csrf"
	tokenCookie = "wfstore_console_token"
)

func newConsole(cfg consoleConfig) (*console, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 50
	}
	cfg.PageSize = min(cfg.PageSize, workflow.MaxPageLimit-1)
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = 5 * time.Minute
	}
	var rnd [32]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	c := &console{cfg: cfg, store: cfg.Store, b: cfg.Store.Engine().Backend(), csrf: hex.EncodeToString(rnd[:]),
		hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		cop:   http.NewCrossOriginProtection(), mux: http.NewServeMux()}
	for _, h := range cfg.Hosts {
		c.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	if err := c.parseTemplates(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(consoleFiles, "console/static")
	if err != nil {
		return nil, err
	}
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET /runs", c.page("runs", c.runsPage))
	c.mux.HandleFunc("GET /run", c.page("run", c.runPage))
	c.mux.HandleFunc("GET /tree", c.page("tree", c.treePage))
	c.mux.HandleFunc("GET /stuck", c.page("stuck", c.stuckPage))
	c.mux.HandleFunc("GET /attempt", c.page("attempt", c.attemptPage))
	for _, a := range c.actions() {
		c.mux.HandleFunc("GET /action/"+a.name, c.page("confirm", a.confirm))
		c.mux.HandleFunc("POST /action/"+a.name, c.act(a))
	}
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, consoleErr(http.StatusNotFound, "no such page: "+r.URL.Path))
	})
	return c, nil
}

func (c *console) parseTemplates() error {
	funcs := template.FuncMap{
		"ms":    msTime,
		"age":   c.age,
		"json":  prettyJSON,
		"short": shortID,
		"dur":   func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(consoleFiles, "console/layout.html", "console/evidence.html")
	if err != nil {
		return err
	}
	names, err := fs.Glob(consoleFiles, "console/page_*.html")
	if err != nil {
		return err
	}
	c.pages = map[string]*template.Template{}
	for _, n := range names {
		t, err := template.Must(layout.Clone()).ParseFS(consoleFiles, n)
		if err != nil {
			return err
		}
		c.pages[strings.TrimSuffix(strings.TrimPrefix(n, "console/page_"), ".html")] = t
	}
	return nil
}

// ServeHTTP checks the Host header, the token and, on a POST, the origin
// and the form token, before any page or action runs.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if !c.hostAllowed(r.Host) {
		c.fail(w, r, consoleErr(http.StatusMisdirectedRequest,
			fmt.Sprintf("this console does not answer to host %q (DNS rebinding protection); use the address it printed, or start it with --host", r.Host)))
		return
	}
	if c.cfg.Token != "" && !c.authorized(w, r) {
		return
	}
	if r.Method == http.MethodPost {
		// A form is small: ids, a cap, and at most one JSON output.
		r.Body = http.MaxBytesReader(w, r.Body, 2*workflow.MaxJSONBytes)
		if err := c.cop.Check(r); err != nil {
			c.fail(w, r, consoleErr(http.StatusForbidden, "cross-origin request refused: "+err.Error()))
			return
		}
		ck, err := r.Cookie(csrfCookie)
		if err != nil || !equalSecret(ck.Value, c.csrf) || !equalSecret(r.PostFormValue("csrf"), c.csrf) {
			c.fail(w, r, consoleErr(http.StatusForbidden, "the form's token is missing or stale (CSRF protection): reload the page and confirm again"))
			return
		}
	} else {
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: c.csrf, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
	c.mux.ServeHTTP(w, r)
}

func (c *console) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return host != "" && c.hosts[strings.ToLower(strings.Trim(host, "[]"))]
}

// authorized accepts the token as a cookie or a bearer header; a GET with
// ?token= sets the cookie and redirects to the same page without it.
func (c *console) authorized(w http.ResponseWriter, r *http.Request) bool {
	if ck, err := r.Cookie(tokenCookie); err == nil && equalSecret(ck.Value, c.cfg.Token) {
		return true
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equalSecret(b, c.cfg.Token) {
		return true
	}
	if q := r.URL.Query(); r.Method == http.MethodGet && q.Has("token") {
		if !equalSecret(q.Get("token"), c.cfg.Token) {
			c.fail(w, r, consoleErr(http.StatusUnauthorized, "wrong token"))
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: c.cfg.Token, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	c.fail(w, r, consoleErr(http.StatusUnauthorized, "this console needs its token: open it once as /?token=TOKEN (the token given to --token)"))
	return false
}

func equalSecret(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// httpError is an error with the HTTP status of the page that shows it.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func consoleErr(code int, msg string) error { return &httpError{code: code, msg: msg} }

// statusOf maps an error to its page's HTTP status: the Store's typed
// errors to 4xx (nothing was written), anything else to 500.
func statusOf(err error) int {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code
	case errors.Is(err, workflow.ErrNotFound), errors.Is(err, backend.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, workflow.ErrInvalidInput):
		return http.StatusBadRequest
	case errors.Is(err, workflow.ErrIneligible), errors.Is(err, workflow.ErrConflict),
		errors.Is(err, workflow.ErrStaleAuthority):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// view is what every template gets.
type view struct {
	Title string
	CSRF  string
	Now   string
	D     any
}

type pageFunc func(r *http.Request) (title string, data any, err error)

// page renders a template with what fn returns, or the error page.
func (c *console) page(name string, fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		title, data, err := fn(r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		c.render(w, http.StatusOK, name, title, data)
	}
}

func (c *console) render(w http.ResponseWriter, code int, name, title string, data any) {
	t := c.pages[name]
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout", view{Title: title, CSRF: c.csrf, Now: msTime(c.cfg.Now().UnixMilli()), D: data}); err != nil {
		http.Error(w, "template: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprint(w, buf.String())
}

type errorView struct {
	Code   int
	Status string
	Msg    string
	Back   string
}

// fail shows the error page with the error's status.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	c.render(w, code, "error", http.StatusText(code), errorView{Code: code, Status: http.StatusText(code), Msg: err.Error(), Back: "/runs"})
}
