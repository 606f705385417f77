package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ttyBuffer is a standard error that says it is a terminal.
type ttyBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *ttyBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.Write(p)
}

func (t *ttyBuffer) IsTerminal() bool { return true }

func (t *ttyBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// clearLine is what a progress line is drawn over and cleared with.
const clearLine = "\r\x1b[K"

func TestProgressLineOnATerminalOnly(t *testing.T) {
	t.Parallel()
	var off bytes.Buffer
	p := newProgress(&off, "export")
	p.begin("exporting", "records")
	p.add(3)
	p.finish()
	assert.Empty(t, off.String(), "off a terminal: nothing")

	var on ttyBuffer
	p = newProgress(&on, "export")
	p.begin("exporting", "records")
	time.Sleep(progressTick + 50*time.Millisecond) // a redraw by the ticker
	p.add(7)
	time.Sleep(progressTick + 50*time.Millisecond)
	p.finish()
	p.finish()
	out := on.String()
	assert.True(t, strings.HasPrefix(out, clearLine+"wfstore export: exporting: 0 records (0s)"), "%q", out)
	assert.Contains(t, out, "exporting: 7 records")
	assert.True(t, strings.HasSuffix(out, clearLine), "the line is cleared at the end: %q", out)
}

func TestConformParserCountsEachCaseAsItEnds(t *testing.T) {
	t.Parallel()
	var ended []string
	p := newTestOutputParser("TestConformance")
	p.onCase = func(c conformCase) { ended = append(ended, c.Name+" "+c.Result) }
	in := "\x16=== RUN   TestConformance\n\x16=== RUN   TestConformance/a\n\x16--- PASS: TestConformance/a (0.01s)\n" +
		"\x16=== RUN   TestConformance/b\n    x_test.go:1: boom\n\x16--- FAIL: TestConformance/b (0.02s)\n\x16--- FAIL: TestConformance (0.03s)\n"
	require.NoError(t, p.read(strings.NewReader(in)))
	assert.Equal(t, []string{"a pass", "b fail"}, ended)
}

// runTo runs the command line in this process with the given standard
// error and returns the exit status and standard output.
func runTo(t *testing.T, stderr interface{ Write([]byte) (int, error) }, args ...string) (int, string) {
	t.Helper()
	var so bytes.Buffer
	code := run(args, &so, stderr)
	return code, so.String()
}

// The long commands draw a progress line on a terminal's standard error
// and, off a terminal, print exactly their results: not a byte of
// progress.
func TestLongCommandsShowProgressOnATerminalAndOnlyResultsOffIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")
	code, _, stderr := runInProcess(t, 2*time.Minute, "demo", "--db", db, "--activations", "4", "--members", "3")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := runInProcess(t, time.Minute, "inspect", "runs", "--db", db, "--json", "--status", "completed")
	require.Equal(t, 0, code, stderr)
	var page struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &page))
	require.NotEmpty(t, page.Runs)
	done := page.Runs[0].ID

	digest := regexp.MustCompile(`^exported \d+ records, digest [0-9a-f]{64}\n$`)
	for i, tty := range []bool{false, true} {
		suffix := []string{"plain", "tty"}[i]
		cases := []struct {
			name string
			args []string
			// step is the progress line's text; results what standard
			// error holds off a terminal ("" for nothing).
			step    string
			results *regexp.Regexp
		}{
			{"export", []string{"export", "--db", db, "--out", filepath.Join(dir, "s-"+suffix+".jsonl")}, "wfstore export: exporting: ", digest},
			{"import", []string{"import", "--db", filepath.Join(dir, "in-"+suffix+".db"), "--in", filepath.Join(dir, "s-"+suffix+".jsonl")}, "wfstore import: reading and checking the stream: ", nil},
			{"verify", []string{"verify", "--db", db}, "wfstore verify: checking " + db, nil},
			{"backup", []string{"backup", "--db", db, "--to", filepath.Join(dir, "b-"+suffix+".db")}, "wfstore backup: copying", nil},
			{"prune", []string{"prune", "--db", db, "--run", done, "--dry-run"}, "wfstore prune: counting what a prune would delete", nil},
		}
		for _, c := range cases {
			if !tty {
				var se bytes.Buffer
				code, stdout := runTo(t, &se, c.args...)
				require.Equal(t, 0, code, "%s: %s", c.name, se.String())
				assert.NotEmpty(t, stdout+se.String(), c.name)
				if c.results != nil {
					assert.Regexp(t, c.results, se.String(), "%s: standard error holds the results only", c.name)
				} else {
					assert.Empty(t, se.String(), "%s: standard error holds nothing off a terminal", c.name)
				}
				assert.NotContains(t, stdout, "\r", c.name)
				continue
			}
			var se ttyBuffer
			code, stdout := runTo(t, &se, c.args...)
			out := se.String()
			require.Equal(t, 0, code, "%s: %q", c.name, out)
			assert.Contains(t, out, clearLine+c.step, "%s: a progress line on the terminal", c.name)
			rest := out[strings.LastIndex(out, clearLine)+len(clearLine):]
			if c.results != nil {
				assert.Regexp(t, c.results, rest, "%s: the line is cleared before the results", c.name)
			} else {
				assert.Empty(t, rest, "%s: the line is cleared at the end", c.name)
			}
			assert.NotContains(t, stdout, "\r", "%s: progress never goes to standard output", c.name)
		}
	}
}
