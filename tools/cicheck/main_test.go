package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const pkg = "github.com/wfstore/wfstore/bolt"

func run(lines ...string) (int, string) {
	var out bytes.Buffer
	code := check(strings.NewReader(strings.Join(lines, "\n")), &out, []string{pkg})
	return code, out.String()
}

func TestPassingRunSucceeds(t *testing.T) {
	code, out := run(
		`{"Action":"pass","Package":"`+pkg+`","Test":"TestA"}`,
		`{"Action":"pass","Package":"`+pkg+`","Elapsed":1.5}`,
	)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "1 passed, 0 failed, 0 skipped")
}

func TestCapabilitySkipIsAllowed(t *testing.T) {
	code, _ := run(
		`{"Action":"pass","Package":"`+pkg+`","Test":"TestA"}`,
		`{"Action":"output","Package":"`+pkg+`","Test":"TestB","Output":"capability MultiInstance=false: bolt cannot\n"}`,
		`{"Action":"skip","Package":"`+pkg+`","Test":"TestB"}`,
	)
	assert.Equal(t, 0, code)
}

func TestUnexplainedSkipFails(t *testing.T) {
	code, out := run(
		`{"Action":"pass","Package":"`+pkg+`","Test":"TestA"}`,
		`{"Action":"output","Package":"`+pkg+`","Test":"TestB","Output":"no server\n"}`,
		`{"Action":"skip","Package":"`+pkg+`","Test":"TestB"}`,
	)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "unexplained skip")
}

func TestSkipOutsideStrictPackagesIsAllowed(t *testing.T) {
	code, _ := run(
		`{"Action":"pass","Package":"x","Test":"TestA"}`,
		`{"Action":"skip","Package":"x","Test":"TestB"}`,
	)
	assert.Equal(t, 0, code)
}

func TestNothingRunFails(t *testing.T) {
	code, out := run(`{"Action":"pass","Package":"x","Elapsed":0}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "no test passed")
}

func TestFailureFails(t *testing.T) {
	code, out := run(
		`{"Action":"fail","Package":"x","Test":"TestA"}`,
		`{"Action":"fail","Package":"x","Elapsed":1}`,
	)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "0 passed, 1 failed")
}

func TestFailurePrintsWhatTheTestPrinted(t *testing.T) {
	code, out := run(
		`{"Action":"output","Package":"x","Test":"TestA/case","Output":"    case.go:12: racing must actually have happened\n"}`,
		`{"Action":"fail","Package":"x","Test":"TestA/case"}`,
		`{"Action":"output","Package":"x","Test":"TestB","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"x","Test":"TestB"}`,
		`{"Action":"fail","Package":"x","Elapsed":1}`,
	)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "--- x TestA/case, last lines of its output:\n    case.go:12: racing must actually have happened\n")
	assert.NotContains(t, out, "quiet", "a passing test's output stays out")
}
