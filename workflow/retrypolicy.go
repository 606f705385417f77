package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/wfstore/wfstore/wftype"
)

// FailureKind is package wftype's FailureKind.
type FailureKind = wftype.FailureKind

// The FailureKind values, as package wftype defines them.
const (
	FailureOwnerUnavailableBeforeAcceptance FailureKind = wftype.FailureOwnerUnavailableBeforeAcceptance
	FailureOwnerReportedRetryable           FailureKind = wftype.FailureOwnerReportedRetryable
	FailureCancellation                     FailureKind = wftype.FailureCancellation
	FailureTerminalTimeout                  FailureKind = wftype.FailureTerminalTimeout
	FailureApprovalDenied                   FailureKind = wftype.FailureApprovalDenied
	FailureSchemaFailure                    FailureKind = wftype.FailureSchemaFailure
	FailureAmbiguousMutation                FailureKind = wftype.FailureAmbiguousMutation
	FailureTerminalFailure                  FailureKind = wftype.FailureTerminalFailure
)

// IneligibleReason is package wftype's IneligibleReason.
type IneligibleReason = wftype.IneligibleReason

// The IneligibleReason values, as package wftype defines them.
const (
	ReasonUnsupportedPolicyVersion     IneligibleReason = wftype.ReasonUnsupportedPolicyVersion
	ReasonInvalidLimit                 IneligibleReason = wftype.ReasonInvalidLimit
	ReasonAttemptsExhausted            IneligibleReason = wftype.ReasonAttemptsExhausted
	ReasonCancellation                 IneligibleReason = wftype.ReasonCancellation
	ReasonTerminalTimeout              IneligibleReason = wftype.ReasonTerminalTimeout
	ReasonApprovalDenied               IneligibleReason = wftype.ReasonApprovalDenied
	ReasonSchemaFailure                IneligibleReason = wftype.ReasonSchemaFailure
	ReasonAmbiguousMutation            IneligibleReason = wftype.ReasonAmbiguousMutation
	ReasonTerminalFailure              IneligibleReason = wftype.ReasonTerminalFailure
	ReasonUnsafeEffectOrReconciliation IneligibleReason = wftype.ReasonUnsafeEffectOrReconciliation
)

// RetryPolicyVersion is the only supported automatic-retry policy version.
const RetryPolicyVersion = 1

// MaxBackoff is the largest MaximumBackoff a policy may declare (one day).
const MaxBackoff = 24 * time.Hour

// maxBackoffMultiplier is the largest backoff_multiplier a policy may declare.
const maxBackoffMultiplier = 100

// RetryEligibility is the input of DecideRetry.
type RetryEligibility struct {
	Version           uint32 // policy version; must be RetryPolicyVersion
	Effect            Effect
	Reconciliation    Reconciliation
	Failure           FailureKind
	AttemptsCompleted uint32 // attempts made so far, including the failed one
	MaxAttempts       uint32 // the policy's max_attempts (counting the first attempt)
	RetryCap          uint32 // the run's retry_cap; automatic retries stop at min(MaxAttempts, RetryCap) total attempts
}

// RetryDecision is the result of DecideRetry: Eligible with NextAttempt, or
// not with Reason.
type RetryDecision struct {
	Eligible    bool
	NextAttempt uint32           // AttemptsCompleted+1 when Eligible, else 0
	Reason      IneligibleReason // set when not Eligible
}

func ineligible(r IneligibleReason) RetryDecision { return RetryDecision{Reason: r} }

// DecideRetry is the automatic-retry decision table,
// evaluated in order, first match wins:
//
//  1. version != 1                                    → unsupported_policy_version
//  2. max_attempts == 0 or retry_cap == 0             → invalid_limit
//  3. completed+1 overflows or > min(max, cap)        → attempts_exhausted
//  4. a terminal kind (cancellation, terminal_timeout, approval_denied,
//     schema_failure, ambiguous_mutation, terminal_failure) → the reason of the same name
//  5. owner_unavailable_before_acceptance             → eligible, any effect
//  6. owner_reported_retryable, read_only + idempotent_replay|receipt_status → eligible
//  7. owner_reported_retryable, mutating + receipt_status → eligible
//  8. owner_reported_retryable otherwise              → unsafe_effect_or_reconciliation
//
// So an exhausted budget is reported before the failure kind, and an
// ambiguous mutation or terminal kind is never eligible. A failure kind
// outside the eight (not Valid) is treated as terminal_failure.
func DecideRetry(e RetryEligibility) RetryDecision {
	if e.Version != RetryPolicyVersion {
		return ineligible(ReasonUnsupportedPolicyVersion)
	}
	if e.MaxAttempts == 0 || e.RetryCap == 0 {
		return ineligible(ReasonInvalidLimit)
	}
	if e.AttemptsCompleted == math.MaxUint32 || e.AttemptsCompleted+1 > min(e.MaxAttempts, e.RetryCap) {
		return ineligible(ReasonAttemptsExhausted)
	}
	eligible := RetryDecision{Eligible: true, NextAttempt: e.AttemptsCompleted + 1}
	switch e.Failure {
	case FailureCancellation:
		return ineligible(ReasonCancellation)
	case FailureTerminalTimeout:
		return ineligible(ReasonTerminalTimeout)
	case FailureApprovalDenied:
		return ineligible(ReasonApprovalDenied)
	case FailureSchemaFailure:
		return ineligible(ReasonSchemaFailure)
	case FailureAmbiguousMutation:
		return ineligible(ReasonAmbiguousMutation)
	case FailureOwnerUnavailableBeforeAcceptance:
		return eligible
	case FailureOwnerReportedRetryable:
		switch {
		case e.Effect == ReadOnly && (e.Reconciliation == IdempotentReplay || e.Reconciliation == ReceiptStatus):
			return eligible
		case e.Effect == Mutating && e.Reconciliation == ReceiptStatus:
			return eligible
		default:
			return ineligible(ReasonUnsafeEffectOrReconciliation)
		}
	default: // FailureTerminalFailure and anything unknown
		return ineligible(ReasonTerminalFailure)
	}
}

// RetryPolicy is a node's automatic-retry policy. Its JSON form has exactly
// six fields, version, max_attempts, eligible_failures, initial_backoff_ms,
// backoff_multiplier and maximum_backoff_ms (the backoffs in whole
// milliseconds); ParseRetryPolicy rejects any other.
type RetryPolicy struct {
	Version           uint32
	MaxAttempts       uint32 // counting the first attempt
	EligibleFailures  []FailureKind
	InitialBackoff    time.Duration // a whole number of milliseconds
	BackoffMultiplier int64
	MaximumBackoff    time.Duration // a whole number of milliseconds
}

// retryPolicyJSON is RetryPolicy's JSON form.
type retryPolicyJSON struct {
	Version           uint32        `json:"version"`
	MaxAttempts       uint32        `json:"max_attempts"`
	EligibleFailures  []FailureKind `json:"eligible_failures"`
	InitialBackoffMS  int64         `json:"initial_backoff_ms"`
	BackoffMultiplier int64         `json:"backoff_multiplier"`
	MaximumBackoffMS  int64         `json:"maximum_backoff_ms"`
}

// MarshalJSON writes the policy's JSON form (backoffs in milliseconds).
func (p RetryPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(retryPolicyJSON{
		Version: p.Version, MaxAttempts: p.MaxAttempts, EligibleFailures: p.EligibleFailures,
		InitialBackoffMS: p.InitialBackoff.Milliseconds(), BackoffMultiplier: p.BackoffMultiplier,
		MaximumBackoffMS: p.MaximumBackoff.Milliseconds(),
	})
}

// UnmarshalJSON reads the policy's JSON form; unknown fields are an
// error. It does not validate: ParseRetryPolicy does.
func (p *RetryPolicy) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w retryPolicyJSON
	if err := dec.Decode(&w); err != nil {
		return err
	}
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	if w.InitialBackoffMS > maxMS || w.InitialBackoffMS < -maxMS || w.MaximumBackoffMS > maxMS || w.MaximumBackoffMS < -maxMS {
		return fmt.Errorf("backoff out of range")
	}
	*p = RetryPolicy{
		Version: w.Version, MaxAttempts: w.MaxAttempts, EligibleFailures: w.EligibleFailures,
		InitialBackoff: time.Duration(w.InitialBackoffMS) * time.Millisecond, BackoffMultiplier: w.BackoffMultiplier,
		MaximumBackoff: time.Duration(w.MaximumBackoffMS) * time.Millisecond,
	}
	return nil
}

const retryPolicyField = "retry policy"

// Validate checks the policy rules: version 1; max_attempts > 0;
// 0 < InitialBackoff <= MaximumBackoff <= MaxBackoff, both whole
// milliseconds;
// 1 <= backoff_multiplier <= 100; eligible_failures non-empty, without
// duplicates, containing only owner_unavailable_before_acceptance and
// owner_reported_retryable. The error is an *InputError.
func (p RetryPolicy) Validate() error {
	switch {
	case p.Version != RetryPolicyVersion:
		return invalid(retryPolicyField, "version must be %d, got %d", RetryPolicyVersion, p.Version)
	case p.MaxAttempts == 0:
		return invalid(retryPolicyField, "max_attempts must be > 0")
	case p.InitialBackoff%time.Millisecond != 0 || p.MaximumBackoff%time.Millisecond != 0:
		return invalid(retryPolicyField, "backoffs must be whole milliseconds, got %v and %v", p.InitialBackoff, p.MaximumBackoff)
	case p.InitialBackoff <= 0:
		return invalid(retryPolicyField, "initial_backoff_ms must be > 0, got %d", p.InitialBackoff.Milliseconds())
	case p.InitialBackoff > p.MaximumBackoff:
		return invalid(retryPolicyField, "initial_backoff_ms (%d) must not exceed maximum_backoff_ms (%d)",
			p.InitialBackoff.Milliseconds(), p.MaximumBackoff.Milliseconds())
	case p.MaximumBackoff > MaxBackoff:
		return invalid(retryPolicyField, "maximum_backoff_ms must be at most %d, got %d", MaxBackoff.Milliseconds(), p.MaximumBackoff.Milliseconds())
	case p.BackoffMultiplier < 1 || p.BackoffMultiplier > maxBackoffMultiplier:
		return invalid(retryPolicyField, "backoff_multiplier must be 1 to %d, got %d", maxBackoffMultiplier, p.BackoffMultiplier)
	case len(p.EligibleFailures) == 0:
		return invalid(retryPolicyField, "eligible_failures must not be empty")
	}
	var seenUnavailable, seenRetryable bool
	for _, k := range p.EligibleFailures {
		var seen *bool
		switch k {
		case FailureOwnerUnavailableBeforeAcceptance:
			seen = &seenUnavailable
		case FailureOwnerReportedRetryable:
			seen = &seenRetryable
		default:
			return invalid(retryPolicyField, "eligible_failures may contain only %s and %s, got %q",
				FailureOwnerUnavailableBeforeAcceptance, FailureOwnerReportedRetryable, k)
		}
		if *seen {
			return invalid(retryPolicyField, "eligible_failures lists %s twice", k)
		}
		*seen = true
	}
	return nil
}

// Admits reports whether k is in the policy's eligible failures.
func (p RetryPolicy) Admits(k FailureKind) bool { return slices.Contains(p.EligibleFailures, k) }

// Backoff is the delay before nextAttempt:
// initial × multiplier^(max(nextAttempt−2, 0)), so attempts 1 and 2 wait the
// initial backoff. The power is computed in uint64 with overflow checked (an
// overflow is an *InputError); the product saturates and is then clamped to
// MaximumBackoff. The policy is validated first, so a nil error means
// 0 < backoff <= MaximumBackoff.
func (p RetryPolicy) Backoff(nextAttempt uint32) (time.Duration, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var exp uint32
	if nextAttempt > 2 {
		exp = nextAttempt - 2
	}
	power, ok := checkedPow(uint64(p.BackoffMultiplier), exp)
	if !ok {
		return 0, invalid(retryPolicyField, "backoff for attempt %d overflows (%d^%d)", nextAttempt, p.BackoffMultiplier, exp)
	}
	hi, product := bits.Mul64(uint64(p.InitialBackoff.Milliseconds()), power)
	if hi != 0 {
		product = math.MaxUint64
	}
	return time.Duration(min(product, uint64(p.MaximumBackoff.Milliseconds()))) * time.Millisecond, nil
}

// checkedPow is base^exp, reporting false when it overflows uint64.
func checkedPow(base uint64, exp uint32) (uint64, bool) {
	if exp == 0 || base == 1 {
		return 1, true
	}
	if base == 0 {
		return 0, true
	}
	// base >= 2: overflow comes within 64 steps.
	r := uint64(1)
	for ; exp > 0; exp-- {
		hi, lo := bits.Mul64(r, base)
		if hi != 0 {
			return 0, false
		}
		r = lo
	}
	return r, true
}

var retryPolicyFields = []string{
	"version", "max_attempts", "eligible_failures",
	"initial_backoff_ms", "backoff_multiplier", "maximum_backoff_ms",
}

// ParseRetryPolicy decodes and validates a policy document strictly: the
// document must be a strict JSON object (the store's JSON rules: no duplicate
// keys, valid UTF-8), field names match exactly (case-sensitively), unknown
// fields are rejected, every value must have its field's type, and the result
// must pass Validate. Errors are *InputError.
func ParseRetryPolicy(raw []byte) (RetryPolicy, error) {
	canon, err := canonicalJSON(retryPolicyField, raw)
	if err != nil {
		return RetryPolicy{}, err
	}
	if canon[0] != '{' {
		return RetryPolicy{}, invalid(retryPolicyField, "must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(canon, &fields); err != nil {
		return RetryPolicy{}, invalid(retryPolicyField, "is malformed: %v", err)
	}
	for k := range fields {
		if !slices.Contains(retryPolicyFields, k) {
			return RetryPolicy{}, invalid(retryPolicyField, "has unknown field %q", k)
		}
	}
	var p RetryPolicy
	if err := json.Unmarshal(canon, &p); err != nil {
		return RetryPolicy{}, invalid(retryPolicyField, "is malformed: %v", err)
	}
	if err := p.Validate(); err != nil {
		return RetryPolicy{}, err
	}
	return p, nil
}
