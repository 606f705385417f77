package model

// Batch admission: the same decisions as one at a time, taken step by step
// over the whole batch. Every candidate is planned, then every planned one
// prepared (in discovery order, each decided on its own), then every
// prepared one handed off, then the owner called for each, then every
// accepted receipt recorded. Whatever stops one at a time stops the batch
// where one at a time would: a plan error ends the batch at its candidate
// (the ones planned before are admitted), a refusal that is not the
// candidate's own (a stale authority) leaves the candidates after it
// unprepared, and the first failed owner call ends the calls (a plain
// owner is called one at a time here; a BatchOwner is offered the whole
// batch in one call): the handoffs recorded and never offered are released
// back to pending. A fault stops the pass at its boundary once that
// step is done for the whole batch.

// DispatchBatch runs one Dispatch restricted to runID in batch mode, with
// a batch as large as limit; batchOwner says whether the owner takes the
// whole batch in one call.
func (m *Model) DispatchBatch(runID string, limit int, mode OwnerMode, owned *Authority, batchOwner bool, now int64) (Summary, Err) {
	run, ok := m.Runs[runID]
	if owned != nil && (!ok || verify(run, owned) != OK) {
		return Summary{}, Stale
	}
	if !ok {
		return Summary{}, OK
	}
	var (
		sum      Summary
		failed   Err = OK
		prepared []*Attempt
	)
	snap := cloneAuth(run.Authority)
	check := func() Err {
		if owned != nil {
			return verify(run, owned)
		}
		if !snapshotOK(run, snap) {
			return Stale
		}
		return OK
	}
	for _, c := range m.discover(run, limit) {
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
			failed = Owner
		}
		if failed != OK {
			break
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
			failed = e
		}
		if failed != OK {
			break
		}
		if att == nil {
			sum.Raced = append(sum.Raced, k)
			continue
		}
		prepared = append(prepared, att)
	}
	if len(prepared) == 0 {
		return sum, failed
	}
	if mode == FaultIntent {
		return sum, Owner
	}
	for _, att := range prepared {
		att.Handoff = HandoffRecorded
	}
	if mode == OwnerDispatchError {
		offered := prepared[:1]
		if batchOwner {
			offered = prepared
		}
		for _, att := range offered {
			m.Calls[att.Identity]++
		}
		for _, att := range prepared[len(offered):] {
			att.Handoff = HandoffPending // released: never offered
		}
		return sum, Owner
	}
	for _, att := range prepared {
		m.ownerAccept(att.Identity)
	}
	if mode == FaultAccepted {
		return sum, Owner
	}
	for _, att := range prepared {
		att.Status = AttemptAdmitted
		att.Receipt = ReceiptOwner
	}
	if mode == FaultReceipt {
		return sum, Owner
	}
	for _, att := range prepared {
		sum.Admitted = append(sum.Admitted, att.Identity)
	}
	return sum, failed
}
