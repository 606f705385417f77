package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

// Ledger is a crash test owner's durable record, shared by every process
// of the test: an append-only file whose every write is fsynced before it
// returns. Lines say "call <identity>" before the owner accepts an attempt,
// "receipt <identity>" once it has, and "refuse <identity>" when it
// refused the attempt without doing any work. A process killed mid-write
// leaves at most a partial last line, which ReadLedger ignores.
type Ledger struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// OpenLedger opens (creating it if needed) the ledger at path.
func OpenLedger(path string) (*Ledger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &Ledger{path: path, f: f}, nil
}

// Append writes lines in one write and fsyncs it.
func (l *Ledger) Append(lines ...string) error {
	if len(lines) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		return err
	}
	return l.f.Sync()
}

// Read reads the ledger's complete lines.
func (l *Ledger) Read() (LedgerState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ReadLedger(l.path)
}

// Close closes the ledger's file.
func (l *Ledger) Close() error { return l.f.Close() }

// LedgerState is what a ledger's complete lines say, by identity.
type LedgerState struct {
	Calls    map[string]int
	Receipts map[string]bool
	Refused  map[string]bool
}

// ReadLedger reads the complete lines of the ledger at path (none when it
// does not exist).
func ReadLedger(path string) (LedgerState, error) {
	st := LedgerState{Calls: map[string]int{}, Receipts: map[string]bool{}, Refused: map[string]bool{}}
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return st, err
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		s = ""
	}
	for _, line := range strings.Split(s, "\n") {
		kind, id, _ := strings.Cut(line, " ")
		switch kind {
		case "call":
			st.Calls[id]++
		case "receipt":
			st.Receipts[id] = true
		case "refuse":
			st.Refused[id] = true
		}
	}
	return st, nil
}

// ReceiptOf is the receipt a ledger owner returns for identity.
func ReceiptOf(identity string) json.RawMessage {
	return json.RawMessage(`{"accepted":"` + identity + `"}`)
}

// OpenBackend opens the store a crash test names: kind is sqlite or bolt
// (loc a file path) or postgres (loc "schema|dsn").
func OpenBackend(ctx context.Context, kind, loc string) (backend.Backend, error) {
	switch kind {
	case "sqlite":
		return sqlite.Open(ctx, loc)
	case "bolt":
		return bolt.Open(ctx, loc)
	case "postgres":
		schema, dsn, _ := strings.Cut(loc, "|")
		return postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}
