package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Case results, as the report spells them.
const (
	resultPass = "pass"
	resultFail = "fail"
	resultSkip = "skip"
)

// conformCase is one conformance case's outcome.
type conformCase struct {
	// Name is "<tier>/<case>", e.g. "store/admission_prepare_is_single_winner_across_instances".
	Name    string  `json:"name"`
	Result  string  `json:"result"`
	Seconds float64 `json:"seconds"`
	// Output is what the case logged: the failure messages, or the skip
	// reason (naming the capability that explains it).
	Output string `json:"output,omitempty"`
}

// reportAdapter is backend.Info as the report spells it.
type reportAdapter struct {
	Name     string            `json:"name"`
	Version  string            `json:"version"`
	Settings map[string]string `json:"settings"`
}

// reportCapabilities is backend.Capabilities as the report spells it.
type reportCapabilities struct {
	MultiInstance bool `json:"multi_instance"`
	MultiProcess  bool `json:"multi_process"`
}

func newReportAdapter(i backend.Info) reportAdapter {
	settings := make(map[string]string, len(i.Settings))
	for k, v := range i.Settings {
		if k != "path" && k != "schema" { // the probe's scratch store, not a setting
			settings[k] = v
		}
	}
	return reportAdapter{Name: i.Name, Version: i.Version, Settings: settings}
}

// conformReport is the certificate `wfstore conform` prints.
type conformReport struct {
	Backend      string             `json:"backend"`
	Adapter      reportAdapter      `json:"adapter"`
	Capabilities reportCapabilities `json:"capabilities"`
	Durability   string             `json:"durability"`
	Filter       string             `json:"filter,omitempty"`
	Go           string             `json:"go"`
	Wfstore      string             `json:"wfstore"`
	Started      time.Time          `json:"started"`
	Seconds      float64            `json:"seconds"`
	// Scratch: where the run made its scratch stores: the prefix of its
	// Postgres schemas' names, or the folder of its files (removed).
	Scratch string `json:"scratch"`
	// Partial: the run was interrupted; the cases listed are those that ended.
	Partial bool `json:"partial,omitempty"`
	Summary struct {
		Passed  int `json:"passed"`
		Failed  int `json:"failed"`
		Skipped int `json:"skipped"`
	} `json:"summary"`
	Cases []conformCase `json:"cases"`
}

func (r *conformReport) count() {
	sort.Slice(r.Cases, func(i, j int) bool { return r.Cases[i].Name < r.Cases[j].Name })
	for _, c := range r.Cases {
		switch c.Result {
		case resultPass:
			r.Summary.Passed++
		case resultFail:
			r.Summary.Failed++
		case resultSkip:
			r.Summary.Skipped++
		}
	}
}

func (r *conformReport) writeJSON(w io.Writer) error {
	if r.Cases == nil {
		r.Cases = []conformCase{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *conformReport) writeMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	verdict := "PASSED"
	switch {
	case r.Partial:
		verdict = "INTERRUPTED (partial report)"
	case r.Summary.Failed > 0:
		verdict = "FAILED"
	case len(r.Cases) == 0:
		verdict = "NO CASES RAN"
	}
	fmt.Fprintf(bw, "# wfstore conformance: %s %s\n\n", r.Backend, verdict)
	fmt.Fprintf(bw, "%d passed, %d failed, %d skipped in %.1f s", r.Summary.Passed, r.Summary.Failed, r.Summary.Skipped, r.Seconds)
	if r.Filter != "" {
		fmt.Fprintf(bw, " (cases matching %q)", r.Filter)
	}
	fmt.Fprintf(bw, ".\n\n")
	fmt.Fprintf(bw, "| | |\n|---|---|\n")
	fmt.Fprintf(bw, "| adapter | %s %s |\n", r.Adapter.Name, r.Adapter.Version)
	fmt.Fprintf(bw, "| capabilities | MultiInstance=%v, MultiProcess=%v |\n", r.Capabilities.MultiInstance, r.Capabilities.MultiProcess)
	fmt.Fprintf(bw, "| opened in | %s mode |\n", r.Durability)
	keys := make([]string, 0, len(r.Adapter.Settings))
	for k := range r.Adapter.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(bw, "| %s | %s |\n", mdCell(k), mdCell(r.Adapter.Settings[k]))
	}
	fmt.Fprintf(bw, "| wfstore | %s (%s) |\n", r.Wfstore, r.Go)
	fmt.Fprintf(bw, "| started | %s |\n\n", r.Started.Format(time.RFC3339))
	section := func(title, result string) {
		first := true
		for _, c := range r.Cases {
			if c.Result != result {
				continue
			}
			if first {
				fmt.Fprintf(bw, "## %s\n\n", title)
				first = false
			}
			fmt.Fprintf(bw, "### %s\n\n```\n%s\n```\n\n", c.Name, strings.TrimRight(c.Output, "\n"))
		}
	}
	section("Failures", resultFail)
	if r.Summary.Skipped > 0 {
		fmt.Fprintf(bw, "## Skips\n\n| case | reason |\n|---|---|\n")
		for _, c := range r.Cases {
			if c.Result == resultSkip {
				fmt.Fprintf(bw, "| %s | %s |\n", c.Name, mdCell(lastLine(c.Output)))
			}
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "## Cases\n\n| case | result | seconds |\n|---|---|--:|\n")
	for _, c := range r.Cases {
		fmt.Fprintf(bw, "| %s | %s | %.2f |\n", c.Name, c.Result, c.Seconds)
	}
	return bw.Flush()
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(strings.TrimSpace(s))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// testOutputParser turns the framed verbose output of a test process
// (-test.v=test2json: framing lines start with 0x16) into one result per
// subtest of the top-level test.
type testOutputParser struct {
	top     string
	current string
	output  map[string]*strings.Builder
	done    []conformCase
	stray   strings.Builder // output outside any subtest
	// onCase, when set, is called as each case ends.
	onCase func(conformCase)
}

func newTestOutputParser(top string) *testOutputParser {
	return &testOutputParser{top: top, output: map[string]*strings.Builder{}}
}

var (
	frameRE  = regexp.MustCompile(`^=== (RUN|PAUSE|CONT|NAME)\s+(\S*)`)
	resultRE = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
)

func (p *testOutputParser) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		p.line(sc.Text())
	}
	return sc.Err()
}

func (p *testOutputParser) line(l string) {
	if framed, ok := strings.CutPrefix(l, "\x16"); ok {
		if m := frameRE.FindStringSubmatch(framed); m != nil {
			p.current = m[2]
			return
		}
		if m := resultRE.FindStringSubmatch(framed); m != nil {
			p.finish(m[2], strings.ToLower(m[1]), m[3])
			return
		}
		l = framed // PASS / FAIL / ok lines of the process
	}
	if b := p.output[p.current]; b != nil && p.current != p.top {
		b.WriteString(strings.TrimPrefix(l, "    "))
		b.WriteByte('\n')
		return
	}
	if p.current != "" && p.current != p.top {
		b := &strings.Builder{}
		b.WriteString(strings.TrimPrefix(l, "    "))
		b.WriteByte('\n')
		p.output[p.current] = b
		return
	}
	p.stray.WriteString(l)
	p.stray.WriteByte('\n')
}

func (p *testOutputParser) finish(name, result, secs string) {
	sub, ok := strings.CutPrefix(name, p.top+"/")
	if !ok {
		return // the top-level test itself
	}
	c := conformCase{Name: sub, Result: result}
	c.Seconds, _ = strconv.ParseFloat(secs, 64)
	if b := p.output[name]; b != nil {
		c.Output = b.String()
		delete(p.output, name)
	}
	p.done = append(p.done, c)
	if p.onCase != nil {
		p.onCase(c)
	}
}

func (p *testOutputParser) results() []conformCase { return p.done }

// unattributed is the output that belonged to no finished case.
func (p *testOutputParser) unattributed() string {
	var b strings.Builder
	b.WriteString(p.stray.String())
	for name, o := range p.output {
		fmt.Fprintf(&b, "%s (did not finish):\n%s", name, o.String())
	}
	return strings.TrimSpace(b.String())
}
