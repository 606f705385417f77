package model

// Admission: Dispatch, the single-winner prepare, exhaustion.

// OwnerMode is how the owner behaves in one Dispatch or Redispatch.
type OwnerMode int

// Owner modes.
const (
	OwnerOK OwnerMode = iota
	OwnerUnsupported
	OwnerPlanError
	OwnerDispatchError // refuses before accepting: holds nothing
	FaultIntent        // fault hook fails at IntentCommitted
	FaultAccepted      // fault hook fails at OwnerAccepted (the owner holds the receipt)
	FaultReceipt       // fault hook fails at ReceiptCommitted
)

// Summary is a Dispatch summary.
type Summary struct {
	Admitted    []string
	Unsupported []ActivationKey
	Raced       []ActivationKey
	Exhausted   []ActivationKey
	Rejected    []ActivationKey
}

// Dispatch runs one Dispatch restricted to runID, one activation at a
// time. owned, when set, is the owned-dispatch authority.
func (m *Model) Dispatch(runID string, limit int, mode OwnerMode, owned *Authority, now int64) (Summary, Err) {
	run, ok := m.Runs[runID]
	if owned != nil && (!ok || verify(run, owned) != OK) {
		return Summary{}, Stale
	}
	if !ok {
		return Summary{}, OK
	}
	return m.dispatchOne(run, m.discover(run, limit), mode, owned, now)
}

// cand is one discovered activation; full marks a run without
// concurrency room (reported raced).
type cand struct {
	act  *Activation
	full bool
}

// discover lists what one pass over run takes.
func (m *Model) discover(run *Run, limit int) []cand {
	// Discovery: admissible activations in key order; a run without
	// concurrency room contributes its next one as raced and stops, unless
	// a check that comes before capacity (retry cap, node allowance, root
	// allowance, counting the activations already taken) refuses that
	// activation first: then it is taken like any other.
	var cands []cand
	c0 := m.counts(run)
	room := run.Limits.ConcurrencyCap - c0.Active
	attempts, tree := c0.Attempts, m.counts(m.root(run)).Tree
	for _, a := range m.actsOf(run.ID) {
		if len(cands) >= limit {
			break
		}
		if !a.Admissible {
			continue
		}
		refused := int64(a.LastAttempt+1) > run.Limits.RetryCap+1 || attempts >= run.Limits.NodeExecutionCap ||
			tree >= m.root(run).Limits.NodeExecutionCap
		if refused {
			cands = append(cands, cand{a, false})
			continue
		}
		if room <= 0 {
			cands = append(cands, cand{a, true})
			break
		}
		room--
		attempts++
		tree++
		cands = append(cands, cand{a, false})
	}
	return cands
}

// dispatchOne admits cands one at a time; the first owner or fault error
// stops the pass.
func (m *Model) dispatchOne(run *Run, cands []cand, mode OwnerMode, owned *Authority, now int64) (Summary, Err) {
	var sum Summary
	snap := cloneAuth(run.Authority)
	for _, c := range cands {
		k := c.act.Def.Key
		if c.full {
			sum.Raced = append(sum.Raced, k)
			continue
		}
		switch mode {
		case OwnerUnsupported:
			sum.Unsupported = append(sum.Unsupported, k)
			continue
		case OwnerPlanError:
			return sum, Owner
		}
		check := func() Err {
			if owned != nil {
				return verify(run, owned)
			}
			if !snapshotOK(run, snap) {
				return Stale
			}
			return OK
		}
		att, e := m.prepare(run, c.act, check, now)
		switch e {
		case OK:
		case Capacity, Resource:
			sum.Raced = append(sum.Raced, k)
			continue
		case NodeExhausted, RootExhausted:
			m.recordExhaustion(run)
			sum.Exhausted = append(sum.Exhausted, k)
			continue
		case Ineligible:
			c.act.Admissible = false // parked
			sum.Rejected = append(sum.Rejected, k)
			continue
		default:
			return sum, e
		}
		if att == nil {
			sum.Raced = append(sum.Raced, k)
			continue
		}
		if mode == FaultIntent {
			return sum, Owner
		}
		att.Handoff = HandoffRecorded
		if mode == OwnerDispatchError {
			m.Calls[att.Identity]++
			return sum, Owner
		}
		m.ownerAccept(att.Identity)
		if mode == FaultAccepted {
			return sum, Owner
		}
		att.Status = AttemptAdmitted
		att.Receipt = ReceiptOwner
		if mode == FaultReceipt {
			return sum, Owner
		}
		sum.Admitted = append(sum.Admitted, att.Identity)
	}
	return sum, OK
}

func (m *Model) ownerAccept(identity string) {
	m.Calls[identity]++
	m.Held[identity] = ReceiptOwner
}

// prepare is the single-winner gate for one activation (nil: not
// admissible now).
func (m *Model) prepare(run *Run, act *Activation, check func() Err, now int64) (*Attempt, Err) {
	if e := check(); e != OK {
		return nil, e
	}
	if act.Status != ActivationPending || run.Status != RunRunning || run.Cancel {
		return nil, OK
	}
	n := act.LastAttempt + 1
	k := AttemptKey{act.Def.Key, n}
	if act.Def.Claim {
		for ak, a := range m.Attempts {
			if ak.RunID == run.ID && ak != k && holdsLease(a.Status) && m.Activations[ak.ActivationKey].Def.Claim {
				return nil, Resource
			}
		}
	}
	if int64(n) > run.Limits.RetryCap+1 {
		return nil, Ineligible
	}
	c := m.counts(run)
	if c.Attempts >= run.Limits.NodeExecutionCap {
		return nil, NodeExhausted
	}
	root := m.root(run)
	if m.counts(root).Tree >= root.Limits.NodeExecutionCap {
		return nil, RootExhausted
	}
	if c.Active >= run.Limits.ConcurrencyCap {
		return nil, Capacity
	}
	act.Status = ActivationRunning
	act.Admissible = false
	act.LastAttempt = n
	id := m.F.Identity(k.RunID, k.NodeID, k.ActivationID, n)
	att := &Attempt{Key: k, Identity: id, Status: AttemptPrepared, Handoff: HandoffPending, Effect: act.Def.Effect, Prepared: now}
	m.Attempts[k] = att
	m.byID[id] = k
	return att, OK
}

// recordExhaustion: a confirmed exhaustion writes the run's one exhaustion
// event the first time (Exhausted) and, every time, parks the run's
// admissible activations.
func (m *Model) recordExhaustion(run *Run) {
	root := m.root(run)
	local := m.counts(run).Attempts >= run.Limits.NodeExecutionCap
	tree := m.counts(root).Tree >= root.Limits.NodeExecutionCap
	if !local && !tree {
		return
	}
	run.Exhausted = true
	for _, a := range m.actsOf(run.ID) {
		a.Admissible = false
	}
}
