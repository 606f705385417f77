package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadFixtureIsReported: every hand-written state change and event
// append of the fixture is reported, and nothing else is.
func TestBadFixtureIsReported(t *testing.T) {
	vs, err := check(filepath.Join("testdata", "bad"))
	require.NoError(t, err)
	var got []string
	for _, v := range vs {
		got = append(got, v.fn+" "+v.what)
	}
	assert.ElementsMatch(t, []string{
		"cancelByHand assigns Activation.Status",
		"cancelByHand assigns Activation.Admissible",
		"cancelByHand assigns Attempt.Status",
		"cancelByHand assigns Run.ActiveCount",
		"cancelByHand assigns Run.AttemptCount",
		"cancelByHand assigns FanOutGroup.Settled",
		"cancelByHand appends an event (emit)",
		"cancelByHand appends an event (insert of a backend.Event)",
		"appendThroughCore appends an event (insert of a backend.Event)",
		"tooMany takes 7 parameters (at most 6)",
		"tooMany has a function literal taking 7 parameters (at most 6)",
	}, got)
	var out bytes.Buffer
	assert.Equal(t, 1, report(&out, vs, nil))
	assert.Contains(t, out.String(), "outside the state core")
}

// TestCoreMayChangeState: the same writes inside a state core (a
// directory ending in internal/state) are not reported; its parameter
// lists still are.
func TestCoreMayChangeState(t *testing.T) {
	vs, err := check(filepath.Join("testdata", "internal", "state"))
	require.NoError(t, err)
	var got []string
	for _, v := range vs {
		got = append(got, v.fn+" "+v.what)
	}
	assert.Equal(t, []string{"TooMany takes 7 parameters (at most 6)"}, got)
}

// TestWorkflowKeepsToTheCore runs the check as CI does, over workflow/
// with the baseline: it passes, and the baseline lists no more than
// remains.
func TestWorkflowKeepsToTheCore(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks workflow/ from source")
	}
	root := filepath.Join("..", "..")
	base, err := readBaseline("baseline.txt")
	require.NoError(t, err)
	var vs []violation
	for _, d := range defaultDirs {
		v, err := check(filepath.Join(root, d))
		require.NoError(t, err)
		vs = append(vs, v...)
	}
	var out bytes.Buffer
	assert.Equal(t, 0, report(&out, vs, base), out.String())
}

// TestLongParameterListsHaveNoBaseline: a function over MaxParams
// parameters fails even when the baseline lists its name.
func TestLongParameterListsHaveNoBaseline(t *testing.T) {
	vs, err := check(filepath.Join("testdata", "bad"))
	require.NoError(t, err)
	var out bytes.Buffer
	code := report(&out, vs, map[string]int{"bad.go cancelByHand": 8, "bad.go tooMany": 2})
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "tooMany takes 7 parameters (at most 6)")
}

// TestBaselineOnlyShrinks: a baseline entry above what remains fails, so
// absorbing a site into the core must lower the list.
func TestBaselineOnlyShrinks(t *testing.T) {
	all, err := check(filepath.Join("testdata", "bad"))
	require.NoError(t, err)
	var vs []violation // the state sites: a long parameter list has no baseline
	for _, v := range all {
		if !v.strict {
			vs = append(vs, v)
		}
	}
	var out bytes.Buffer
	code := report(&out, vs, map[string]int{"bad.go cancelByHand": 8, "bad.go gone": 1})
	assert.Equal(t, 1, code)
	assert.True(t, strings.Contains(out.String(), `"bad.go gone"`), out.String())
	out.Reset()
	assert.Equal(t, 0, report(&out, vs, map[string]int{"bad.go cancelByHand": 8, "bad.go appendThroughCore": 1}), out.String())
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
