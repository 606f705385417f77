package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/wfstore/wfstore/workflow"
)

const consoleUsage = `wfstore console: a web console over a store: runs by status, a run's
activations, attempts, leases, retry schedules and events, a root's
composition tree, stuck attempts; and, each after a confirmation step,
cancel a run or a tree, raise an allowance, retry a failed node, repair
an attempt. Every action goes through the Store with its usual checks and
never uses an execution authority read from the store.

  wfstore console --db PATH [--listen 127.0.0.1:8080] [flags]

It listens on loopback unless --listen names another address, which
needs --token (sent by the browser as a cookie after one visit of
/?token=TOKEN, or as "Authorization: Bearer TOKEN"). Without
--tls-cert/--tls-key the token travels in clear: use TLS, or a tunnel,
off loopback. The console answers only to the Host names of its address,
the loopback names and --host (DNS rebinding protection), and refuses
cross-origin and token-less form posts. It never creates a store.

Flags:
`

func consoleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on (host:port); off loopback it needs --token")
	token := fs.String("token", "", "a secret every request must carry (required off loopback; default $WFSTORE_CONSOLE_TOKEN)")
	hosts := fs.String("host", "", "comma-separated extra host names the Host header may carry (a name clients use to reach the console)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate file (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "the private key file of --tls-cert")
	page := fs.Int("page", 50, fmt.Sprintf("rows per listing (1..%d)", workflow.MaxPageLimit-1))
	stuck := fs.Duration("stuck-after", 5*time.Minute, "the stuck page's default: attempts admitted longer than this")
	fs.Usage = func() {
		fmt.Fprint(stderr, consoleUsage)
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if *token == "" {
		*token = os.Getenv("WFSTORE_CONSOLE_TOKEN")
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "wfstore console: "+format+"\n", a...)
		return errUsage
	}
	host, _, err := net.SplitHostPort(*listen)
	switch {
	case err != nil:
		return usageErr("--listen must be host:port, got %q", *listen)
	case (*tlsCert == "") != (*tlsKey == ""):
		return usageErr("--tls-cert and --tls-key go together")
	case *page < 1 || *page >= workflow.MaxPageLimit:
		return usageErr("--page must be 1..%d", workflow.MaxPageLimit-1)
	case !isLoopbackHost(host) && *token == "":
		return usageErr("--listen %s is not a loopback address: it needs --token (and --tls-cert/--tls-key, or the token travels in clear)", *listen)
	case !isLoopbackHost(host) && isWildcardHost(host) && *hosts == "":
		return usageErr("--listen %s accepts any address: name the host clients use with --host (DNS rebinding protection)", *listen)
	}
	if err := sf.check(); err != nil {
		fmt.Fprintf(stderr, "wfstore console: %v\n", err)
		return errUsage
	}
	b, err := sf.openExisting(ctx) // never creates (or migrates) a store
	if err != nil {
		return err
	}
	defer b.Close()
	allowed := []string{}
	if !isWildcardHost(host) {
		allowed = append(allowed, host)
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			allowed = append(allowed, h)
		}
	}
	c, err := newConsole(consoleConfig{Store: workflow.New(b), Hosts: allowed, Token: *token, PageSize: *page, StuckAfter: *stuck})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "wfstore console: serving %s on %s://%s/\n", sf.where(), scheme, ln.Addr())
	if *token != "" {
		fmt.Fprintln(stdout, "wfstore console: open /?token=TOKEN once (the value of --token) to log in")
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		if *tlsCert != "" {
			done <- srv.ServeTLS(ln, *tlsCert, *tlsKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &interruptedError{left: "the console stopped; every action it took had committed or changed nothing"}
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func isWildcardHost(h string) bool {
	if h == "" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsUnspecified()
}
