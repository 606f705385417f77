package workflow

// Run limits and their defaults. This is the one place they are stated.
//
// A run stores all four limits explicitly (Run.Limits); the defaults apply
// only to the RunLimits given to CreateRun:
//
//   - NodeExecutionCap (default DefaultNodeExecutionCap): attempts ever
//     created in the run, failed, abandoned and cancelled ones included;
//     for a root run it also bounds the attempts of its whole tree.
//   - ConcurrencyCap (default DefaultConcurrencyCap): attempts active at
//     once in the run.
//   - CycleCap (default DefaultCycleCap): an activation's generation must
//     stay below it.
//   - RetryCap (default DefaultRetryCap): used twice. An explicit retry
//     (RetryFailedNode, or consuming a schedule) may reach attempt
//     RetryCap+1, while an automatic retry stops at min(policy
//     max_attempts, RetryCap) attempts in all. RetryCap 0 is meaningful:
//     no automatic retry is ever scheduled (the decision table's
//     invalid_limit) and no explicit retry is allowed.
//
// A zero NodeExecutionCap, ConcurrencyCap or CycleCap, which would admit
// nothing, means "unset" and takes the default; an unset (nil) RetryCap
// takes the default, and RetryCap(0) is stored as 0. A child run's unset
// limits take its parent's stored values instead, and a set one may only
// narrow the parent's.
const (
	DefaultNodeExecutionCap = 1000
	DefaultConcurrencyCap   = 8
	DefaultCycleCap         = 100
	DefaultRetryCap         = 3
	// MaxRunDepth and MaxDescendants bound child-run composition.
	MaxRunDepth    = 8
	MaxDescendants = 64
	// AllowanceReadBudget is the allowance observation's read budget.
	AllowanceReadBudget = 1000
)

// RunLimits are the limits requested for a new run (NewRun) or child run
// (NewChildRun). Zero caps and a nil RetryCap are unset and take the
// defaults listed with DefaultRetryCap (a child: its parent's values); the
// run stores the resolved values in Run.Limits.
type RunLimits struct {
	NodeExecutionCap int64
	ConcurrencyCap   int64
	CycleCap         int64
	// RetryCap, when set, is stored as given, 0 included (never retry);
	// build it with RetryCap(n).
	RetryCap *uint32
}

// RetryCap returns n as a set RunLimits.RetryCap.
func RetryCap(n uint32) *uint32 { return &n }

// ExactLimits returns the RunLimits that request exactly the stored limits
// l: CreateRun with it stores l again (RetryCap 0 included). Limits no
// request can reproduce (a cap of 0 or below, which a request reads as
// unset, or a RetryCap outside 0..2^32-1) are refused with an
// *InputError (ErrInvalidInput) rather than replaced by a default.
func ExactLimits(l Limits) (RunLimits, error) {
	for _, c := range []struct {
		name string
		v    int64
	}{{"node execution cap", l.NodeExecutionCap}, {"concurrency cap", l.ConcurrencyCap}, {"cycle cap", l.CycleCap}} {
		if c.v <= 0 {
			return RunLimits{}, invalid("limits", "%s %d cannot be requested exactly (0 or below means unset)", c.name, c.v)
		}
	}
	if l.RetryCap < 0 || l.RetryCap > int64(^uint32(0)) {
		return RunLimits{}, invalid("limits", "retry cap %d is outside 0..%d", l.RetryCap, ^uint32(0))
	}
	return RunLimits{NodeExecutionCap: l.NodeExecutionCap, ConcurrencyCap: l.ConcurrencyCap, CycleCap: l.CycleCap,
		RetryCap: RetryCap(uint32(l.RetryCap))}, nil
}
