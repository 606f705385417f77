package workflow

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func eligibility(f FailureKind, eff Effect, rec Reconciliation) RetryEligibility {
	return RetryEligibility{
		Version: RetryPolicyVersion, Effect: eff, Reconciliation: rec, Failure: f,
		AttemptsCompleted: 1, MaxAttempts: 3, RetryCap: 3,
	}
}

func eligibleAt(n uint32) RetryDecision            { return RetryDecision{Eligible: true, NextAttempt: n} }
func notEligible(r IneligibleReason) RetryDecision { return RetryDecision{Reason: r} }

func TestDecideRetryTable(t *testing.T) {
	t.Parallel()
	base := eligibility(FailureOwnerUnavailableBeforeAcceptance, ReadOnly, IdempotentReplay)
	with := func(mut func(*RetryEligibility)) RetryEligibility { e := base; mut(&e); return e }
	cases := []struct {
		name string
		in   RetryEligibility
		want RetryDecision
	}{
		// Row 1.
		{"version 0", with(func(e *RetryEligibility) { e.Version = 0 }), notEligible(ReasonUnsupportedPolicyVersion)},
		{"version 2", with(func(e *RetryEligibility) { e.Version = 2 }), notEligible(ReasonUnsupportedPolicyVersion)},
		{"version before limits", with(func(e *RetryEligibility) { e.Version = 2; e.MaxAttempts = 0 }), notEligible(ReasonUnsupportedPolicyVersion)},
		// Row 2.
		{"max attempts 0", with(func(e *RetryEligibility) { e.MaxAttempts = 0 }), notEligible(ReasonInvalidLimit)},
		{"retry cap 0", with(func(e *RetryEligibility) { e.RetryCap = 0 }), notEligible(ReasonInvalidLimit)},
		{"limits before exhaustion", with(func(e *RetryEligibility) { e.RetryCap = 0; e.AttemptsCompleted = math.MaxUint32 }), notEligible(ReasonInvalidLimit)},
		// Row 3.
		{"overflow", with(func(e *RetryEligibility) {
			e.AttemptsCompleted, e.MaxAttempts, e.RetryCap = math.MaxUint32, math.MaxUint32, math.MaxUint32
		}), notEligible(ReasonAttemptsExhausted)},
		{"exhausted by max attempts", with(func(e *RetryEligibility) { e.AttemptsCompleted, e.MaxAttempts = 3, 3 }), notEligible(ReasonAttemptsExhausted)},
		{"exhausted by retry cap", with(func(e *RetryEligibility) { e.AttemptsCompleted, e.MaxAttempts, e.RetryCap = 2, 5, 2 }), notEligible(ReasonAttemptsExhausted)},
		{"exhausted beyond", with(func(e *RetryEligibility) { e.AttemptsCompleted = 10 }), notEligible(ReasonAttemptsExhausted)},
		{"exhausted cancellation reads exhausted", with(func(e *RetryEligibility) {
			e.Failure, e.AttemptsCompleted = FailureCancellation, 3
		}), notEligible(ReasonAttemptsExhausted)},
		{"exhausted ambiguous mutation reads exhausted", with(func(e *RetryEligibility) {
			e.Failure, e.AttemptsCompleted, e.Effect, e.Reconciliation = FailureAmbiguousMutation, 3, Mutating, RepairRequired
		}), notEligible(ReasonAttemptsExhausted)},
		{"last allowed attempt", with(func(e *RetryEligibility) { e.AttemptsCompleted = 2 }), eligibleAt(3)},
		{"zero completed", with(func(e *RetryEligibility) { e.AttemptsCompleted = 0 }), eligibleAt(1)},
		{"max uint32 limits", with(func(e *RetryEligibility) {
			e.AttemptsCompleted, e.MaxAttempts, e.RetryCap = math.MaxUint32-1, math.MaxUint32, math.MaxUint32
		}), eligibleAt(math.MaxUint32)},
		// Row 4: terminal kinds, whatever the effect.
		{"cancellation", with(func(e *RetryEligibility) { e.Failure = FailureCancellation }), notEligible(ReasonCancellation)},
		{"terminal timeout", with(func(e *RetryEligibility) { e.Failure = FailureTerminalTimeout }), notEligible(ReasonTerminalTimeout)},
		{"approval denied", with(func(e *RetryEligibility) { e.Failure = FailureApprovalDenied }), notEligible(ReasonApprovalDenied)},
		{"schema failure", with(func(e *RetryEligibility) { e.Failure = FailureSchemaFailure }), notEligible(ReasonSchemaFailure)},
		{"ambiguous mutation", with(func(e *RetryEligibility) { e.Failure = FailureAmbiguousMutation }), notEligible(ReasonAmbiguousMutation)},
		{"ambiguous mutation receipt status", with(func(e *RetryEligibility) {
			e.Failure, e.Effect, e.Reconciliation = FailureAmbiguousMutation, Mutating, ReceiptStatus
		}), notEligible(ReasonAmbiguousMutation)},
		{"terminal failure", with(func(e *RetryEligibility) { e.Failure = FailureTerminalFailure }), notEligible(ReasonTerminalFailure)},
		{"unknown kind is terminal", with(func(e *RetryEligibility) { e.Failure = "bogus" }), notEligible(ReasonTerminalFailure)},
		{"empty kind is terminal", with(func(e *RetryEligibility) { e.Failure = "" }), notEligible(ReasonTerminalFailure)},
		// Row 5: any effect and reconciliation.
		{"unavailable read-only idempotent", base, eligibleAt(2)},
		{"unavailable mutating repair", with(func(e *RetryEligibility) { e.Effect, e.Reconciliation = Mutating, RepairRequired }), eligibleAt(2)},
		{"unavailable mutating idempotent", with(func(e *RetryEligibility) { e.Effect, e.Reconciliation = Mutating, IdempotentReplay }), eligibleAt(2)},
		{"unavailable read-only repair", with(func(e *RetryEligibility) { e.Effect, e.Reconciliation = ReadOnly, RepairRequired }), eligibleAt(2)},
		// Row 6.
		{"retryable read-only idempotent", eligibility(FailureOwnerReportedRetryable, ReadOnly, IdempotentReplay), eligibleAt(2)},
		{"retryable read-only receipt", eligibility(FailureOwnerReportedRetryable, ReadOnly, ReceiptStatus), eligibleAt(2)},
		// Row 7.
		{"retryable mutating receipt", eligibility(FailureOwnerReportedRetryable, Mutating, ReceiptStatus), eligibleAt(2)},
		// Row 8.
		{"retryable read-only repair", eligibility(FailureOwnerReportedRetryable, ReadOnly, RepairRequired), notEligible(ReasonUnsafeEffectOrReconciliation)},
		{"retryable mutating repair", eligibility(FailureOwnerReportedRetryable, Mutating, RepairRequired), notEligible(ReasonUnsafeEffectOrReconciliation)},
		{"retryable mutating idempotent", eligibility(FailureOwnerReportedRetryable, Mutating, IdempotentReplay), notEligible(ReasonUnsafeEffectOrReconciliation)},
		{"retryable unknown effect", eligibility(FailureOwnerReportedRetryable, "", ReceiptStatus), notEligible(ReasonUnsafeEffectOrReconciliation)},
		{"retryable unknown reconciliation", eligibility(FailureOwnerReportedRetryable, ReadOnly, "x"), notEligible(ReasonUnsafeEffectOrReconciliation)},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, DecideRetry(c.in), c.name)
	}
}

// The upstream policy test: eligible 1→2 with max 3 and cap 2, unsafe for a
// repair-required mutation, exhausted at 2, never for terminal kinds.
func TestDecideRetryUpstreamPolicy(t *testing.T) {
	t.Parallel()
	e := RetryEligibility{
		Version: 1, Effect: ReadOnly, Reconciliation: IdempotentReplay, Failure: FailureOwnerReportedRetryable,
		AttemptsCompleted: 1, MaxAttempts: 3, RetryCap: 2,
	}
	assert.Equal(t, eligibleAt(2), DecideRetry(e))

	unsafe := e
	unsafe.Effect, unsafe.Reconciliation = Mutating, RepairRequired
	assert.Equal(t, notEligible(ReasonUnsafeEffectOrReconciliation), DecideRetry(unsafe))

	exhausted := e
	exhausted.AttemptsCompleted = 2
	assert.Equal(t, notEligible(ReasonAttemptsExhausted), DecideRetry(exhausted))

	for kind, reason := range map[FailureKind]IneligibleReason{
		FailureCancellation: ReasonCancellation, FailureTerminalTimeout: ReasonTerminalTimeout,
		FailureApprovalDenied: ReasonApprovalDenied, FailureSchemaFailure: ReasonSchemaFailure,
		FailureAmbiguousMutation: ReasonAmbiguousMutation, FailureTerminalFailure: ReasonTerminalFailure,
	} {
		for _, eff := range []Effect{ReadOnly, Mutating} {
			for _, rec := range []Reconciliation{IdempotentReplay, ReceiptStatus, RepairRequired} {
				term := e
				term.Failure, term.Effect, term.Reconciliation = kind, eff, rec
				assert.Equal(t, notEligible(reason), DecideRetry(term), "%s %s %s", kind, eff, rec)
			}
		}
	}
}

func TestFailureKindValid(t *testing.T) {
	t.Parallel()
	for _, k := range []FailureKind{
		FailureOwnerUnavailableBeforeAcceptance, FailureOwnerReportedRetryable, FailureCancellation,
		FailureTerminalTimeout, FailureApprovalDenied, FailureSchemaFailure, FailureAmbiguousMutation,
		FailureTerminalFailure,
	} {
		assert.True(t, k.Valid(), k)
	}
	for _, k := range []FailureKind{"", "Cancellation", "unknown", "owner_reported_retryable "} {
		assert.False(t, k.Valid(), k)
	}
	assert.Equal(t, "owner_unavailable_before_acceptance", string(FailureOwnerUnavailableBeforeAcceptance))
	assert.Equal(t, "unsafe_effect_or_reconciliation", string(ReasonUnsafeEffectOrReconciliation))
	assert.Equal(t, "read_only", string(ReadOnly))
	assert.Equal(t, "receipt_status", string(ReceiptStatus))
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func validPolicy() RetryPolicy {
	return RetryPolicy{
		Version: 1, MaxAttempts: 3,
		EligibleFailures: []FailureKind{FailureOwnerUnavailableBeforeAcceptance, FailureOwnerReportedRetryable},
		InitialBackoff:   time.Second, BackoffMultiplier: 2, MaximumBackoff: time.Minute,
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, validPolicy().Validate())
	ok := []func(*RetryPolicy){
		func(p *RetryPolicy) { p.EligibleFailures = []FailureKind{FailureOwnerReportedRetryable} },
		func(p *RetryPolicy) {
			p.EligibleFailures = []FailureKind{FailureOwnerReportedRetryable, FailureOwnerUnavailableBeforeAcceptance}
		},
		func(p *RetryPolicy) { p.InitialBackoff, p.MaximumBackoff = ms(1), ms(1) },
		func(p *RetryPolicy) { p.InitialBackoff, p.MaximumBackoff = MaxBackoff, MaxBackoff },
		func(p *RetryPolicy) { p.BackoffMultiplier = 1 },
		func(p *RetryPolicy) { p.BackoffMultiplier = 100 },
		func(p *RetryPolicy) { p.MaxAttempts = 1 },
		func(p *RetryPolicy) { p.MaxAttempts = math.MaxUint32 },
	}
	for i, mut := range ok {
		p := validPolicy()
		mut(&p)
		assert.NoError(t, p.Validate(), i)
	}
	bad := map[string]func(*RetryPolicy){
		"version 0":           func(p *RetryPolicy) { p.Version = 0 },
		"version 2":           func(p *RetryPolicy) { p.Version = 2 },
		"max attempts 0":      func(p *RetryPolicy) { p.MaxAttempts = 0 },
		"initial 0":           func(p *RetryPolicy) { p.InitialBackoff = 0 },
		"initial negative":    func(p *RetryPolicy) { p.InitialBackoff = ms(-1) },
		"initial above max":   func(p *RetryPolicy) { p.InitialBackoff, p.MaximumBackoff = ms(2), ms(1) },
		"maximum above limit": func(p *RetryPolicy) { p.MaximumBackoff = MaxBackoff + ms(1) },
		"both above limit":    func(p *RetryPolicy) { p.InitialBackoff, p.MaximumBackoff = MaxBackoff+ms(1), MaxBackoff+ms(1) },
		"sub-millisecond":     func(p *RetryPolicy) { p.InitialBackoff = time.Second + time.Microsecond },
		"maximum negative":    func(p *RetryPolicy) { p.MaximumBackoff = ms(-5) },
		"multiplier 0":        func(p *RetryPolicy) { p.BackoffMultiplier = 0 },
		"multiplier negative": func(p *RetryPolicy) { p.BackoffMultiplier = -2 },
		"multiplier 101":      func(p *RetryPolicy) { p.BackoffMultiplier = 101 },
		"no failures":         func(p *RetryPolicy) { p.EligibleFailures = nil },
		"empty failures":      func(p *RetryPolicy) { p.EligibleFailures = []FailureKind{} },
		"duplicate failure": func(p *RetryPolicy) {
			p.EligibleFailures = []FailureKind{FailureOwnerReportedRetryable, FailureOwnerReportedRetryable}
		},
		"terminal failure":     func(p *RetryPolicy) { p.EligibleFailures = []FailureKind{FailureTerminalFailure} },
		"ambiguous mutation":   func(p *RetryPolicy) { p.EligibleFailures = append(p.EligibleFailures, FailureAmbiguousMutation) },
		"cancellation":         func(p *RetryPolicy) { p.EligibleFailures = []FailureKind{FailureCancellation} },
		"unknown failure kind": func(p *RetryPolicy) { p.EligibleFailures = []FailureKind{"retry_please"} },
	}
	for name, mut := range bad {
		p := validPolicy()
		mut(&p)
		err := p.Validate()
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
		var ie *InputError
		require.ErrorAs(t, err, &ie, name)
		assert.Equal(t, "retry policy", ie.Field, name)
		_, err = p.Backoff(2)
		assert.ErrorIs(t, err, ErrInvalidInput, "Backoff validates first: %s", name)
	}
}

func TestRetryPolicyAdmits(t *testing.T) {
	t.Parallel()
	p := validPolicy()
	p.EligibleFailures = []FailureKind{FailureOwnerReportedRetryable}
	assert.True(t, p.Admits(FailureOwnerReportedRetryable))
	assert.False(t, p.Admits(FailureOwnerUnavailableBeforeAcceptance))
	assert.False(t, p.Admits(FailureAmbiguousMutation))
	assert.False(t, RetryPolicy{}.Admits(FailureOwnerReportedRetryable))
}

func TestRetryPolicyBackoff(t *testing.T) {
	t.Parallel()
	p := validPolicy() // 1000ms × 2^(n−2), max 60s
	for next, want := range map[uint32]int64{0: 1000, 1: 1000, 2: 1000, 3: 2000, 4: 4000, 5: 8000, 7: 32_000, 8: 60_000, 9: 60_000, 60: 60_000, 65: 60_000} {
		got, err := p.Backoff(next)
		require.NoError(t, err, next)
		assert.Equal(t, ms(want), got, next)
	}
	// 2^63 still fits the uint64 power; 2^64 overflows: an error, not a clamp.
	_, err := p.Backoff(66)
	assert.ErrorIs(t, err, ErrInvalidInput)
	_, err = p.Backoff(math.MaxUint32)
	assert.ErrorIs(t, err, ErrInvalidInput)

	// Multiplier 1 never overflows.
	one := validPolicy()
	one.BackoffMultiplier = 1
	for _, next := range []uint32{1, 2, 100, math.MaxUint32} {
		got, err := one.Backoff(next)
		require.NoError(t, err)
		assert.Equal(t, time.Second, got)
	}

	// The product saturates before the clamp: initial × power overflows uint64
	// while the power itself does not.
	big := RetryPolicy{Version: 1, MaxAttempts: 9, EligibleFailures: []FailureKind{FailureOwnerReportedRetryable},
		InitialBackoff: MaxBackoff, BackoffMultiplier: 100, MaximumBackoff: MaxBackoff}
	got, err := big.Backoff(11) // 100^9 = 1e18 fits; × 8.64e7 saturates
	require.NoError(t, err)
	assert.Equal(t, MaxBackoff, got)
	_, err = big.Backoff(12) // 100^10 = 1e20 overflows
	assert.ErrorIs(t, err, ErrInvalidInput)

	three := validPolicy()
	three.InitialBackoff, three.BackoffMultiplier, three.MaximumBackoff = ms(7), 3, time.Second
	for next, want := range map[uint32]int64{2: 7, 3: 21, 4: 63, 5: 189, 6: 567, 7: 1000} {
		got, err := three.Backoff(next)
		require.NoError(t, err)
		assert.Equal(t, ms(want), got, next)
	}
}

func TestParseRetryPolicy(t *testing.T) {
	t.Parallel()
	const good = `{"version":1,"max_attempts":3,"eligible_failures":["owner_unavailable_before_acceptance","owner_reported_retryable"],"initial_backoff_ms":1000,"backoff_multiplier":2,"maximum_backoff_ms":60000}`
	p, err := ParseRetryPolicy([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, validPolicy(), p)
	// Order and whitespace do not matter.
	p, err = ParseRetryPolicy([]byte(` { "maximum_backoff_ms" : 60000, "backoff_multiplier":2,"initial_backoff_ms":1000,
		"eligible_failures":["owner_unavailable_before_acceptance","owner_reported_retryable"],"max_attempts":3,"version":1 } `))
	require.NoError(t, err)
	assert.Equal(t, validPolicy(), p)
	// Round trip through MustCanonical.
	p, err = ParseRetryPolicy(mustCanonical(validPolicy()))
	require.NoError(t, err)
	assert.Equal(t, validPolicy(), p)

	bad := map[string]string{
		"empty":            ``,
		"not an object":    `[1]`,
		"null":             `null`,
		"string":           `"x"`,
		"empty object":     `{}`,
		"unknown field":    strings.Replace(good, `"version":1`, `"version":1,"jitter":true`, 1),
		"wrong case field": strings.Replace(good, `"version"`, `"Version"`, 1),
		"duplicate field":  strings.Replace(good, `"version":1`, `"version":1,"version":1`, 1),
		"missing field":    strings.Replace(good, `"max_attempts":3,`, ``, 1),
		"float version":    strings.Replace(good, `"version":1`, `"version":1.0`, 1),
		"string version":   strings.Replace(good, `"version":1`, `"version":"1"`, 1),
		"negative max":     strings.Replace(good, `"max_attempts":3`, `"max_attempts":-3`, 1),
		"huge max":         strings.Replace(good, `"max_attempts":3`, `"max_attempts":4294967296`, 1),
		"null failures":    strings.Replace(good, `["owner_unavailable_before_acceptance","owner_reported_retryable"]`, `null`, 1),
		"bad failure":      strings.Replace(good, `"owner_reported_retryable"]`, `"terminal_failure"]`, 1),
		"numeric failure":  strings.Replace(good, `"owner_reported_retryable"]`, `7]`, 1),
		"float multiplier": strings.Replace(good, `"backoff_multiplier":2`, `"backoff_multiplier":1.5`, 1),
		"trailing data":    good + `{}`,
		"invalid json":     good[:len(good)-1],
		"version 2":        strings.Replace(good, `"version":1`, `"version":2`, 1),
		"initial > max":    strings.Replace(good, `"initial_backoff_ms":1000`, `"initial_backoff_ms":60001`, 1),
	}
	for name, raw := range bad {
		_, err := ParseRetryPolicy([]byte(raw))
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
		var ie *InputError
		assert.ErrorAs(t, err, &ie, name)
	}
}

func FuzzRetryPolicy(f *testing.F) {
	f.Add([]byte(`{"version":1,"max_attempts":3,"eligible_failures":["owner_unavailable_before_acceptance","owner_reported_retryable"],"initial_backoff_ms":1000,"backoff_multiplier":2,"maximum_backoff_ms":60000}`))
	f.Add([]byte(`{"version":1,"max_attempts":1,"eligible_failures":["owner_reported_retryable"],"initial_backoff_ms":86400000,"backoff_multiplier":100,"maximum_backoff_ms":86400000}`))
	f.Add([]byte(`{"version":1,"max_attempts":9,"eligible_failures":["owner_reported_retryable"],"initial_backoff_ms":1,"backoff_multiplier":1,"maximum_backoff_ms":1}`))
	f.Add([]byte(`{"version":1,"Version":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseRetryPolicy(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not match ErrInvalidInput", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed policy is invalid: %v", err)
		}
		prev := int64(0)
		for next := uint32(1); next <= 100; next++ {
			bd, err := p.Backoff(next)
			b := bd.Milliseconds()
			if err != nil {
				// Only a power overflow may fail: multiplier^(next−2) >= 2^64.
				power := new(big.Int).Exp(big.NewInt(p.BackoffMultiplier), big.NewInt(int64(next)-2), nil)
				if !errors.Is(err, ErrInvalidInput) || next < 2 || power.BitLen() <= 64 {
					t.Fatalf("Backoff(%d) of %+v: %v", next, p, err)
				}
				return
			}
			exp := int64(0)
			if next > 2 {
				exp = int64(next) - 2
			}
			want := new(big.Int).Exp(big.NewInt(p.BackoffMultiplier), big.NewInt(exp), nil)
			want.Mul(want, big.NewInt(p.InitialBackoff.Milliseconds()))
			if want.Cmp(big.NewInt(p.MaximumBackoff.Milliseconds())) > 0 {
				want.SetInt64(p.MaximumBackoff.Milliseconds())
			}
			if b <= 0 || b > p.MaximumBackoff.Milliseconds() || b < prev || want.Int64() != b {
				t.Fatalf("Backoff(%d) = %d of %+v (previous %d)", next, b, p, prev)
			}
			prev = b
		}
	})
}

func FuzzDecideRetry(f *testing.F) {
	f.Add(uint32(1), "read_only", "idempotent_replay", "owner_reported_retryable", uint32(1), uint32(3), uint32(2))
	f.Add(uint32(1), "mutating", "repair_required", "owner_reported_retryable", uint32(1), uint32(3), uint32(3))
	f.Add(uint32(1), "mutating", "receipt_status", "owner_unavailable_before_acceptance", uint32(math.MaxUint32), uint32(math.MaxUint32), uint32(math.MaxUint32))
	f.Add(uint32(2), "read_only", "receipt_status", "cancellation", uint32(0), uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, version uint32, eff, rec, failure string, completed, maxAttempts, retryCap uint32) {
		e := RetryEligibility{
			Version: version, Effect: Effect(eff), Reconciliation: Reconciliation(rec), Failure: FailureKind(failure),
			AttemptsCompleted: completed, MaxAttempts: maxAttempts, RetryCap: retryCap,
		}
		d := DecideRetry(e)
		if d.Eligible {
			if d.Reason != "" || uint64(d.NextAttempt) != uint64(completed)+1 || d.NextAttempt > min(maxAttempts, retryCap) {
				t.Fatalf("DecideRetry(%+v) = %+v", e, d)
			}
			if version != RetryPolicyVersion || (e.Failure != FailureOwnerUnavailableBeforeAcceptance && e.Failure != FailureOwnerReportedRetryable) {
				t.Fatalf("DecideRetry(%+v) = %+v: eligible for a non-retryable input", e, d)
			}
			return
		}
		if d.NextAttempt != 0 || d.Reason == "" {
			t.Fatalf("DecideRetry(%+v) = %+v", e, d)
		}
		if e.Failure == FailureAmbiguousMutation && d.Eligible {
			t.Fatal("ambiguous mutation eligible")
		}
	})
}
