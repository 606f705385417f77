package conformance

import (
	"strings"
	"testing"
)

// testCase is one conformance case: a named check run against a fresh store.
type testCase struct {
	// Name says what the case proves, e.g. "insert_existing_key_conflicts".
	Name string
	// Run performs the check. It reports through e.T and may call e.T.Fatal.
	Run func(e *env)
	// Serial keeps the case from running in parallel with others.
	Serial bool
}

// Run runs the whole suite against the adapter h describes: every contract
// case as subtest "contract/<name>", every store case as "store/<name>",
// and every store case again with Dispatch in batch mode as
// "store-batch/<name>" (the model tier has a batch-mode case of its own).
// Each case gets a fresh store from h.New, a first Backend opened by the
// runner and an env; cases run in parallel unless marked Serial.
//
// When the test binary was started as a child process of a case (IsChild reports true)
// Run instead performs the requested child role and returns without running
// any case.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Name == "" {
		h.Name = "adapter"
	}
	if h.New == nil || h.Open == nil {
		t.Fatalf("conformance: Harness %q is incomplete: New (set: %v) and Open (set: %v) are required",
			h.Name, h.New != nil, h.Open != nil)
	}
	if IsChild() {
		runChild(t, h)
		return
	}
	runTier(t, h, "contract", contractTier(), 0)
	runTier(t, h, "store", storeTier(false), 0)
	runTier(t, h, "store-batch", storeTier(true), batchTierSize)
}

// batchTierSize is the batch size of the store-batch tier: every store case
// again, with every Dispatch in batch mode. It is smaller than most cases'
// Limit, so that a pass admits several batches.
const batchTierSize = 3

func runTier(t *testing.T, h Harness, tier string, cases []testCase, batch int) {
	t.Helper()
	seen := make(map[string]bool, len(cases))
	for _, c := range cases {
		switch {
		case c.Name == "" || strings.ContainsAny(c.Name, " \t\n"):
			t.Errorf("conformance: %s case %q: a name must be non-empty without spaces", tier, c.Name)
			continue
		case seen[c.Name]:
			t.Errorf("conformance: %s case %q is listed twice", tier, c.Name)
			continue
		case c.Run == nil:
			t.Errorf("conformance: %s case %q has no Run", tier, c.Name)
			continue
		}
		seen[c.Name] = true
		t.Run(tier+"/"+c.Name, func(t *testing.T) {
			if !c.Serial {
				t.Parallel()
			}
			e := newEnv(t, h)
			e.batch = batch
			c.Run(e)
		})
	}
}
