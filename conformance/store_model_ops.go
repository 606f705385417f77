package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/wfstore/wfstore/conformance/internal/model"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// The model tier's operations: the abstract op, its generator, and exec,
// which runs one op on the Store and on the model and compares the results.

type opKind int

const (
	opNewRun opKind = iota
	opAddAct
	opDispatch
	opObserve
	opConsume
	opConsumeNext
	opRetryFailed
	opTransfer
	opCancel
	opPause
	opResume
	opReconcile
	opRedispatch
	opHandoff
	opReceipt
	opChild
	opCancelNever
	opSettleOrphan
	opSignal
	opRepair
	opReceiptPass
	opIncrease
	opSummary
	opHistory
	opInspect
	opTreeCancel
	opGrow
	opAddFanOut
	numOpKinds
)

var opNames = [...]string{"new_run", "add_activation", "dispatch", "observe", "consume_due_retry", "consume_next_due_retry",
	"retry_failed_node", "transfer_authority", "request_cancellation", "pause", "resume", "reconcile_prepared",
	"redispatch", "handoff", "persist_receipt", "create_child_run", "cancel_never_dispatched",
	"settle_orphaned_cancellation", "mark_cancellation_signalled", "repair", "reconcile_receipt_backed",
	"increase_allowance", "run_summary", "attempt_history", "inspect_intent_and_receipt",
	"request_tree_cancellation", "grow_child_run", "add_fan_out"}

// op is an abstract operation: indices are taken modulo the runs,
// activations or attempts that exist when it runs, so any sequence is valid
// and shrinking keeps it meaningful.
type op struct {
	K          opKind
	A, B, C, D int
}

func (o op) String() string { return fmt.Sprintf("%s(%d,%d,%d,%d)", opNames[o.K], o.A, o.B, o.C, o.D) }

func opGen() *rapid.Generator[op] {
	// Weighted: admission and observation are what the interesting states
	// come from.
	kinds := []opKind{opDispatch, opDispatch, opDispatch, opDispatch, opAddAct, opAddAct, opAddAct,
		opObserve, opObserve, opObserve, opObserve, opObserve, opObserve, opChild, opGrow, opGrow, opTreeCancel,
		opIncrease, opReceiptPass, opAddFanOut, opAddFanOut}
	for k := opNewRun; k < numOpKinds; k++ {
		kinds = append(kinds, k)
	}
	return rapid.Custom(func(t *rapid.T) op {
		return op{
			K: rapid.SampledFrom(kinds).Draw(t, "k"),
			A: rapid.IntRange(0, 7).Draw(t, "a"),
			B: rapid.IntRange(0, 8).Draw(t, "b"),
			C: rapid.IntRange(0, 5).Draw(t, "c"),
			D: rapid.IntRange(0, 2).Draw(t, "d"),
		}
	})
}

var dispatchModes = []model.OwnerMode{model.OwnerOK, model.OwnerOK, model.OwnerUnsupported, model.OwnerPlanError,
	model.OwnerDispatchError, model.FaultIntent, model.FaultAccepted, model.FaultReceipt, model.OwnerOK}

var obsKinds = []string{model.ObservedAdmitted, model.ObservedRunning, model.ObservedDeferred, model.ObservedSucceeded, model.ObservedFailed,
	model.ObservedRetryableFailure, model.ObservedPaused, model.ObservedCancelled, model.ObservedUnknown}

var repairActions = []string{model.RepairSucceeded, model.RepairFailed, model.RepairCancelled, model.RepairAbandon}

// exec runs o on both sides and compares the results; it returns a
// description for the log.
func (sq *sequence) exec(rt *rapid.T, o op) string {
	ctx, now := sq.ctx, ms(sq.at())
	var att model.AttemptKey
	var identity string
	needAtt := func() bool {
		if len(sq.atts) == 0 {
			return false
		}
		att = sq.atts[o.A%len(sq.atts)]
		identity = sq.m.Attempts[att].Identity
		return true
	}
	// needIn picks, when some attempt is in one of the statuses, one of
	// those instead (so children and settlements happen often enough).
	needWhere := func(want func(*model.Attempt) bool) bool {
		var in []model.AttemptKey
		for _, k := range sq.atts {
			if want(sq.m.Attempts[k]) {
				in = append(in, k)
			}
		}
		if len(in) == 0 {
			return needAtt()
		}
		att = in[o.A%len(in)]
		identity = sq.m.Attempts[att].Identity
		return true
	}
	needIn := func(statuses ...string) bool {
		return needWhere(func(a *model.Attempt) bool { return slices.Contains(statuses, a.Status) })
	}
	switch o.K {
	case opNewRun:
		sq.createRun(rt, o.B, o.C%2 == 0)
		return "run " + sq.runs[len(sq.runs)-1]
	case opAddAct:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		v := o.C
		if o.D == 2 && o.C%2 == 0 {
			v = 6 // a join
		}
		return sq.addAct(rt, runID, o.B, v)
	case opDispatch:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		mode := dispatchModes[o.B%len(dispatchModes)]
		var owned *model.Authority
		if o.C%3 != 0 {
			owned = sq.auth(runID, o.C)
		}
		limit := 1 + o.D
		msum, merr := sq.dispatch(rt, runID, mode, owned, limit)
		return fmt.Sprintf("%s mode %d owned=%v limit %d: %+v err=%q", runID, mode, owned, limit, msum, merr)
	case opGrow:
		// A child run with an admitted attempt of its own, under the
		// newest live run: an activation there, a dispatch that stops
		// after the intent (a prepared parent attempt), the child, an
		// activation in the child and its dispatch, each step compared.
		var parent string
		for i := len(sq.runs) - 1; i >= 0 && parent == ""; i-- {
			if r := sq.m.Runs[sq.runs[i]]; r.Status == model.RunRunning && !r.Cancel {
				parent = r.ID
			}
		}
		if parent == "" {
			return "skip"
		}
		desc := sq.addAct(rt, parent, o.B, 0)
		sq.dispatch(rt, parent, model.FaultIntent, nil, 1)
		sq.addFresh()
		desc += "; " + sq.exec(rt, op{K: opChild, A: o.A, B: o.B})
		if child := sq.runs[len(sq.runs)-1]; sq.m.Runs[child].Parent != "" {
			sq.addAct(rt, child, o.C, 0)
			sq.dispatch(rt, child, model.OwnerOK, nil, 1)
			desc += "; child " + child + " dispatched"
		}
		return desc
	case opObserve:
		var pick bool
		switch o.D {
		case 0:
			pick = needAtt()
		case 1:
			// Observations of cancelling runs' work.
			pick = needWhere(func(a *model.Attempt) bool {
				return sq.m.Runs[a.Key.RunID].Cancel && (a.Status == model.AttemptAdmitted || a.Status == model.AttemptRunning || a.Status == model.AttemptCancelling)
			})
		default:
			pick = needIn(model.AttemptAdmitted, model.AttemptRunning, model.AttemptCancelling)
		}
		if !pick {
			return "skip"
		}
		kind := obsKinds[o.B%len(obsKinds)]
		if o.D == 2 {
			kind = model.ObservedSucceeded
		}
		obs := workflow.Observation{Kind: workflow.ObservationKind(kind)}
		if kind == model.ObservedSucceeded {
			obs.Output = json.RawMessage(`{"out":1}`)
		}
		wr, werr := sq.s.ApplyObservation(ctx, identity, obs, now)
		mr, merr := sq.m.Observe(identity, kind, sq.at())
		g := fmt.Sprintf("%s unresolved=%v", wr.Status, wr.Unresolved)
		w := fmt.Sprintf("%s unresolved=%v", mr.Status, mr.Unresolved)
		if wr.Schedule != nil {
			g += fmt.Sprintf(" schedule=%d->%d due+%d", wr.Schedule.FailedAttempt, wr.Schedule.NextAttempt, msOf(wr.Schedule.Due)-t0.UnixMilli()-sq.at())
		}
		if mr.Schedule != nil {
			w += fmt.Sprintf(" schedule=%d->%d due+%d", mr.Schedule.FailedAttempt, mr.Schedule.NextAttempt, mr.Schedule.DueMS-sq.at())
		}
		if r := wr.NotScheduled; r != nil {
			g += " not_scheduled=" + string(r.Reason)
			if r.Ineligible != "" {
				g += "/" + string(r.Ineligible)
			}
		}
		if mr.NotScheduled != "" {
			w += " not_scheduled=" + mr.NotScheduled
		}
		sq.agree(rt, "observe "+kind, g, werr, w, merr)
		return fmt.Sprintf("%s %s: %s err=%q", att, kind, w, merr)
	case opConsume, opRetryFailed:
		if len(sq.acts) == 0 {
			return "skip"
		}
		k := sq.acts[o.A%len(sq.acts)]
		var wr workflow.RetryRequeue
		var mr model.Requeue
		var werr error
		var merr model.Err
		if o.K == opConsume {
			at := sq.at() + int64(o.B%2)*1000
			wr, werr = sq.s.Engine().ConsumeDueRetry(ctx, wfKey(k), ms(at))
			mr, merr = sq.m.ConsumeDueRetry(k, at)
		} else {
			last := int64(0)
			if a := sq.m.Activations[k]; a != nil {
				last = int64(a.LastAttempt)
			}
			failed := uint32(max(last+int64(o.B%3)-1, 1))
			wr, werr = sq.s.RetryFailedNode(ctx, wfKey(k), failed, now)
			mr, merr = sq.m.RetryFailedNode(k, failed)
		}
		g := fmt.Sprintf("%v %d->%d", modelKey(wr.Key), wr.PreviousAttempt, wr.NextAttempt)
		w := fmt.Sprintf("%v %d->%d", mr.Key, mr.Prev, mr.Next)
		sq.agree(rt, opNames[o.K], g, werr, w, merr)
		return fmt.Sprintf("%s: %s err=%q", k, w, merr)
	case opConsumeNext:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		at := sq.at() + int64(o.B%2)*1000
		wr, werr := sq.s.Engine().ConsumeNextDueRetry(ctx, runID, ms(at))
		mr, found, merr := sq.m.ConsumeNextDueRetry(runID, at)
		g, w := "none", "none"
		if wr != nil {
			g = fmt.Sprintf("%v %d->%d", modelKey(wr.Key), wr.PreviousAttempt, wr.NextAttempt)
		}
		if found && merr == model.OK {
			w = fmt.Sprintf("%v %d->%d", mr.Key, mr.Prev, mr.Next)
		}
		sq.agree(rt, "consume_next_due_retry", g, werr, w, merr)
		return fmt.Sprintf("%s: %s err=%q", runID, w, merr)
	case opTransfer:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		exp := sq.auth(runID, 1+o.B%2)
		rep := model.Authority{Generation: exp.Generation + 1, Tag: fmt.Sprintf("g%d", exp.Generation+1)}
		werr := sq.s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: runID, Expected: *wfAuthority(exp), Replacement: *wfAuthority(&rep)}, now)
		merr := sq.m.TransferAuthority(runID, *exp, rep)
		sq.agree(rt, "transfer_authority", "", werr, "", merr)
		return fmt.Sprintf("%s from %v: err=%q", runID, *exp, merr)
	case opCancel, opPause, opResume, opTreeCancel:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		a := sq.auth(runID, o.B)
		var g, w string
		var werr error
		var merr model.Err
		switch o.K {
		case opTreeCancel:
			if o.C%2 == 0 {
				runID = sq.m.Runs[runID].Root // most often at a root
			}
			var st workflow.RunStatus
			st, werr = sq.s.RequestTreeCancellation(ctx, runID, wfAuthority(a), now)
			g = string(st)
			w, merr = sq.m.RequestTreeCancellation(runID, a)
		case opCancel:
			var st workflow.RunStatus
			st, werr = sq.s.RequestCancellation(ctx, runID, wfAuthority(a), now)
			g = string(st)
			w, merr = sq.m.RequestCancellation(runID, a)
		case opPause:
			werr, merr = sq.s.PauseRun(ctx, runID, wfAuthority(a), now), sq.m.Pause(runID, a)
		case opResume:
			werr, merr = sq.s.ResumeRun(ctx, runID, wfAuthority(a), now), sq.m.Resume(runID, a)
		}
		sq.agree(rt, opNames[o.K], g, werr, w, merr)
		return fmt.Sprintf("%s auth=%v: %s err=%q", runID, a, w, merr)
	case opReconcile:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		a := sq.auth(runID, o.C)
		lookup := o.B%2 == 0
		opts := workflow.ReconcileOptions{RunID: runID, Authority: wfAuthority(a), Limit: 10}
		if lookup {
			opts.Lookup = sq.o
		}
		ws, werr := sq.s.Engine().ReconcilePrepared(ctx, opts, now)
		mres, merr := sq.m.Reconcile(runID, a, 10, lookup)
		g := fmt.Sprintf("%+v", model.ReconcileSummary{NeverDispatched: refIdentities(ws.NeverDispatched), Recovered: refIdentities(ws.Recovered),
			RepairRequired: refIdentities(ws.RepairRequired), SafeReadOnly: refIdentities(ws.SafeReadOnly)})
		sq.agree(rt, "reconcile_prepared", g, werr, fmt.Sprintf("%+v", mres), merr)
		return fmt.Sprintf("%s lookup=%v auth=%v: %+v err=%q", runID, lookup, a, mres, merr)
	case opRedispatch:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		a := sq.auth(runID, o.C)
		fails := o.B%4 == 3
		sq.o.mode = model.OwnerOK
		if fails {
			sq.o.mode = model.OwnerDispatchError
		}
		ws, werr := sq.s.Engine().Redispatch(ctx, sq.o, workflow.ReconcileOptions{RunID: runID, Authority: wfAuthority(a), Limit: 10}, now)
		mres, merr := sq.m.Redispatch(runID, a, 10, fails)
		g := fmt.Sprintf("%+v", model.RedispatchSummary{Admitted: refIdentities(ws.Admitted), Skipped: refIdentities(ws.Skipped)})
		sq.agree(rt, "redispatch", g, werr, fmt.Sprintf("%+v", mres), merr)
		return fmt.Sprintf("%s owner_fails=%v auth=%v: %+v err=%q", runID, fails, a, mres, merr)
	case opHandoff:
		if !needAtt() {
			return "skip"
		}
		a := sq.auth(att.RunID, o.B)
		werr := sq.s.Engine().Handoff(ctx, wfAttemptKey(att), wfAuthority(a), now)
		merr := sq.m.Handoff(att, a)
		sq.agree(rt, "handoff", "", werr, "", merr)
		return fmt.Sprintf("%s auth=%v: err=%q", att, a, merr)
	case opReceipt:
		if !needAtt() {
			return "skip"
		}
		a := sq.auth(att.RunID, o.C)
		kind, raw := model.ReceiptOwner, ownerReceipt(identity)
		if o.B%2 == 1 {
			kind, raw = model.ReceiptOther, json.RawMessage(`{"other":"`+identity+`"}`)
		}
		werr := sq.s.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: wfAttemptKey(att), Receipt: raw, Authority: wfAuthority(a)}, now)
		merr := sq.m.PersistReceipt(att, kind, a)
		sq.agree(rt, "persist_receipt", "", werr, "", merr)
		return fmt.Sprintf("%s %s auth=%v: err=%q", att, kind, a, merr)
	case opChild:
		if runID, ok := sq.run(o.A); ok && !slices.ContainsFunc(sq.atts, func(k model.AttemptKey) bool { return sq.m.Attempts[k].Status == model.AttemptPrepared }) {
			// A dispatch that stops after the intent leaves a prepared
			// attempt to start the child from.
			sq.dispatch(rt, runID, model.FaultIntent, nil, 1)
			sq.addFresh()
		}
		if !needIn(model.AttemptPrepared) {
			return "skip"
		}
		target := fmt.Sprintf(`{"t":%d}`, o.B%2)
		wid, wc, werr := sq.s.CreateChildRun(ctx, workflow.NewChildRun{Parent: wfAttemptKey(att), Target: json.RawMessage(target)}, now)
		mid, mc, merr := sq.m.CreateChildRun(att, target)
		sq.agree(rt, "create_child_run", fmt.Sprint(wid, wc), werr, fmt.Sprint(mid, mc), merr)
		if merr == model.OK && mc {
			sq.runs = append(sq.runs, mid)
		}
		return fmt.Sprintf("%s target %s: created=%v err=%q", att, target, mc, merr)
	case opCancelNever:
		if !needAtt() {
			return "skip"
		}
		a := sq.auth(att.RunID, o.B)
		wd, werr := sq.s.Engine().CancelNeverDispatched(ctx, identity, wfAuthority(a), now)
		md, merr := sq.m.CancelNeverDispatched(identity, a)
		sq.agree(rt, "cancel_never_dispatched", fmt.Sprint(wd), werr, fmt.Sprint(md), merr)
		return fmt.Sprintf("%s auth=%v: %v err=%q", att, a, md, merr)
	case opSettleOrphan:
		if !needAtt() {
			return "skip"
		}
		wst, werr := sq.s.Engine().SettleOrphanedCancellation(ctx, identity, now)
		mst, merr := sq.m.SettleOrphanedCancellation(identity)
		sq.agree(rt, "settle_orphaned_cancellation", string(wst), werr, mst, merr)
		return fmt.Sprintf("%s: %s err=%q", att, mst, merr)
	case opSignal:
		if !needAtt() {
			return "skip"
		}
		werr := sq.s.Engine().MarkCancellationSignalled(ctx, identity, now)
		merr := sq.m.MarkCancellationSignalled(identity)
		sq.agree(rt, "mark_cancellation_signalled", "", werr, "", merr)
		return fmt.Sprintf("%s: err=%q", att, merr)
	case opAddFanOut:
		if len(sq.acts) == 0 {
			return "skip"
		}
		ctl := sq.acts[o.A%len(sq.acts)]
		n, max, failFast, fanIn := 1+o.B%4, 1+(o.B/4)%2, o.D%2 == 1, o.C >= 3
		def := memberVariant(o.C)
		nf := workflow.NewFanOut{Controller: wfKey(ctl), MaxConcurrency: int64(max), Effect: workflow.Effect(def.Effect),
			Reconciliation: workflow.Reconciliation(def.Reconciliation), FanIn: fanIn}
		if failFast {
			nf.OnFailure = workflow.FailFast
		}
		if def.Policy != nil {
			nf.RetryPolicy = wfActivation(def).RetryPolicy
		}
		for i := range n {
			nf.Members = append(nf.Members, json.RawMessage(fmt.Sprintf(`{"member":%d}`, i)))
		}
		wc, werr := sq.s.AddFanOut(ctx, nf, now)
		mc, merr := sq.m.AddFanOut(ctl, n, max, failFast, fanIn, def)
		sq.agree(rt, "add_fan_out", fmt.Sprint(wc), werr, fmt.Sprint(mc), merr)
		if merr == model.OK && mc {
			sq.acts = append(sq.acts, sq.m.Groups[ctl].Members...)
		}
		return fmt.Sprintf("%s n=%d max=%d fail_fast=%v fan_in=%v variant %d: created=%v err=%q", ctl, n, max, failFast, fanIn, o.C%3, mc, merr)
	case opRepair:
		if !needAtt() {
			return "skip"
		}
		action := repairActions[o.B%len(repairActions)]
		a := sq.auth(att.RunID, o.C)
		var out json.RawMessage
		if action == model.RepairSucceeded {
			out = json.RawMessage(`{"repaired":true}`)
		}
		werr := sq.s.Repair(ctx, workflow.RepairRequest{Identity: identity, Action: workflow.RepairAction(action), Output: out, Authority: wfAuthority(a)}, now)
		merr := sq.m.Repair(identity, action, a)
		sq.agree(rt, "repair", "", werr, "", merr)
		return fmt.Sprintf("%s %s auth=%v: err=%q", att, action, a, merr)
	case opReceiptPass, opIncrease, opSummary, opHistory, opInspect:
		return sq.execOps(rt, o)
	}
	return "unknown op"
}

// execOps runs the operations beyond admission (the receipt-backed pass,
// the allowance increase, inspection) on both sides.
func (sq *sequence) execOps(rt *rapid.T, o op) string {
	ctx, now := sq.ctx, ms(sq.at())
	switch o.K {
	case opReceiptPass:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		a := sq.fenced(runID, o.D)
		obs := &passObserver{kind: obsKinds[o.B%len(obsKinds)], fail: o.C%5 == 4}
		ws, werr := sq.s.Engine().ReconcileReceiptBacked(ctx, obs, workflow.ReceiptPassOptions{RunID: runID, Authority: wfAuthority(a), Limit: 1 + o.C%3}, now)
		var got []model.PassOutcome
		for _, r := range ws.Attempts {
			got = append(got, model.PassOutcome{Identity: r.Attempt.Identity, Applied: string(r.Applied),
				Status: string(r.Status), Unresolved: r.Unresolved, Failed: r.Err != nil})
		}
		want, merr := sq.m.ReceiptPass(runID, a, 1+o.C%3, func(string) (string, bool) { return obs.kind, !obs.fail }, sq.at())
		sq.agree(rt, "reconcile_receipt_backed", fmt.Sprintf("%+v", got), werr, fmt.Sprintf("%+v", want), merr)
		return fmt.Sprintf("%s %s fail=%v auth=%v: %+v err=%q", runID, obs.kind, obs.fail, a, want, merr)
	case opIncrease:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		expected := sq.m.Runs[runID].Limits.NodeExecutionCap
		target := expected + int64(1+o.C%3)
		switch o.B % 6 {
		case 4:
			target = expected // invalid: not an increase
		case 5:
			expected-- // conflict (or invalid at 0)
		}
		a := sq.fenced(runID, o.D)
		werr := sq.s.IncreaseAllowance(ctx, workflow.AllowanceIncrease{RunID: runID, ExpectedCap: expected, TargetCap: target, Authority: wfAuthority(a)}, now)
		merr := sq.m.IncreaseAllowance(runID, expected, target, a)
		sq.agree(rt, "increase_allowance", "", werr, "", merr)
		return fmt.Sprintf("%s %d->%d auth=%v: err=%q", runID, expected, target, a, merr)
	case opSummary:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		rs, werr := sq.s.RunSummary(ctx, runID)
		got := model.RunCounts{Activations: map[string]int{}, Attempts: map[string]int{}, Leases: len(rs.Leases), RunCap: rs.Allowance.RunCap}
		for st, n := range rs.Activations {
			got.Activations[string(st)] = n
		}
		for st, n := range rs.Attempts {
			got.Attempts[string(st)] = n
		}
		if werr == nil && (!rs.ActivationsComplete || !rs.AttemptsComplete || !rs.LeasesComplete) {
			rt.Fatalf("run_summary: a small run's summary is incomplete")
		}
		want, merr := sq.m.Summary(runID)
		sq.agree(rt, "run_summary", fmt.Sprintf("%+v", got), werr, fmt.Sprintf("%+v", want), merr)
		return fmt.Sprintf("%s: %+v err=%q", runID, want, merr)
	case opHistory:
		runID, ok := sq.run(o.A)
		if !ok {
			return "skip"
		}
		desc := o.B%2 == 1
		p := workflow.AttemptQuery{RunID: runID, Descending: desc, Limit: 1 + o.C%3}
		var got []string
		var werr error
		for range 1000 {
			page, err := sq.s.Attempts(ctx, p)
			if err != nil {
				werr = err
				break
			}
			for _, a := range page.Items {
				got = append(got, a.Identity)
			}
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		want := sq.m.History(runID, desc)
		sq.agree(rt, "attempt_history", fmt.Sprint(got), werr, fmt.Sprint(want), model.OK)
		return fmt.Sprintf("%s descending=%v: %d attempts", runID, desc, len(want))
	case opInspect:
		if len(sq.atts) == 0 {
			return "skip"
		}
		att := sq.atts[o.A%len(sq.atts)]
		identity := sq.m.Attempts[att].Identity
		g := ""
		in, werr := sq.s.Engine().DispatchIntent(ctx, identity)
		if werr == nil {
			var raw []byte
			raw, werr = sq.s.Engine().DispatchReceipt(ctx, identity)
			found := werr == nil
			if errors.Is(werr, workflow.ErrNotFound) {
				werr = nil
			}
			g = fmt.Sprintf("%s %s %s found=%v", in.SideEffect, in.Intent, receiptKind(identity, raw), found)
			if in.Identity != identity || in.Key != wfAttemptKey(att) {
				rt.Fatalf("inspect: the intent names another attempt")
			}
		}
		effect, receipt, merr := sq.m.Intent(identity)
		w := fmt.Sprintf(`%s {"do":"%s"} %s found=%v`, effect, att.NodeID, receipt, receipt != "")
		sq.agree(rt, "inspect_intent_and_receipt", g, werr, w, merr)
		return fmt.Sprintf("%s: %s err=%q", att, w, merr)
	}
	return "unknown op"
}

// addAct adds activation variant v of node n<b%4> to runID on both sides.
func (sq *sequence) addAct(rt *rapid.T, runID string, b, v int) string {
	na := actVariant(model.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("n%d", b%4), ActivationID: "x"}, v)
	wc, werr := sq.s.AddActivation(sq.ctx, wfActivation(na), ms(sq.at()))
	mc, merr := sq.m.AddActivation(na)
	sq.agree(rt, "add_activation", fmt.Sprint(wc), werr, fmt.Sprint(mc), merr)
	if merr == model.OK && mc {
		sq.acts = append(sq.acts, na.Key)
	}
	return fmt.Sprintf("%s variant %d: created=%v err=%q", na.Key, v%7, mc, merr)
}

// dispatch runs one Dispatch restricted to runID on both sides and
// compares the summaries.
func (sq *sequence) dispatch(rt *rapid.T, runID string, mode model.OwnerMode, owned *model.Authority, limit int) (model.Summary, model.Err) {
	ctx, now := faultseam.With(sq.ctx, sq.o.fault), ms(sq.at())
	sq.o.mode = mode
	opts := workflow.DispatchOptions{RunID: runID, Authority: wfAuthority(owned), Limit: limit}
	var (
		ws   workflow.DispatchSummary
		werr error
		msum model.Summary
		merr model.Err
	)
	switch sq.batch {
	case 0:
		ws, werr = sq.s.Dispatch(ctx, sq.o, opts, now)
		msum, merr = sq.m.Dispatch(runID, limit, mode, owned, sq.at())
	default:
		opts.BatchSize, opts.OwnerConcurrency = max(limit, 2), 3
		if mode == model.OwnerDispatchError {
			// Concurrent calls each fail: how many start before the first
			// failure stops the others is timing. One at a time, it is one.
			opts.OwnerConcurrency = 1
		}
		var o workflow.Owner = sq.o
		if sq.batch == 2 {
			o = batchOwner{sq.o}
		}
		ws, werr = sq.s.Dispatch(ctx, o, opts, now)
		msum, merr = sq.m.DispatchBatch(runID, limit, mode, owned, sq.batch == 2, sq.at())
	}
	got := model.Summary{Admitted: refIdentities(ws.Admitted), Unsupported: modelKeys(ws.Unsupported), Raced: modelKeys(ws.Raced), Exhausted: modelKeys(ws.Exhausted)}
	for _, r := range ws.Rejected {
		got.Rejected = append(got.Rejected, modelKey(r.Key))
		if c := errClass(r.Err); c != model.Ineligible {
			rt.Logf("dispatch: rejection of %v has error class %q (%v)", r.Key, c, r.Err)
			rt.Fatalf("dispatch: a rejection has error class %s", c)
		}
	}
	// The summary so far is returned with a batch error too.
	sq.agree(rt, "dispatch", fmt.Sprintf("%+v", got), werr, fmt.Sprintf("%+v", msum), merr)
	if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", msum); g != w {
		rt.Logf("dispatch: store summary %s, model %s", g, w)
		rt.Fatalf("dispatch: summary differs from the model")
	}
	return msum, merr
}

var modelPolicy = model.Policy{MaxAttempts: 3, Retryable: true, InitialMS: 5, Multiplier: 2, MaximumMS: 40}

// actVariant returns the activation definition variant v of node in run.
func actVariant(k model.ActivationKey, v int) model.NewActivation {
	na := model.NewActivation{Key: k, Effect: model.ReadOnly, Reconciliation: model.RepairRequired}
	switch v % 7 {
	case 1:
		p := modelPolicy
		na.Reconciliation, na.Policy = model.IdempotentReplay, &p
	case 2:
		p := modelPolicy
		p.MaxAttempts = 2
		na.Effect, na.Reconciliation, na.Policy = model.Mutating, model.ReceiptStatus, &p
	case 3:
		p := modelPolicy
		na.Effect, na.Policy = model.Mutating, &p
	case 4:
		p := modelPolicy
		p.Retryable, p.Unavailable = false, true
		na.Reconciliation, na.Policy, na.Claim = model.ReceiptStatus, &p, true
	case 5:
		na.Effect, na.Claim = model.Mutating, true
		if k.NodeID != "n0" {
			na.Predecessors = []model.ActivationKey{{RunID: k.RunID, NodeID: "n0", ActivationID: "x"}}
		}
	case 6:
		// A join waiting for the other nodes n0 to n2 of its run.
		for _, n := range []string{"n0", "n1", "n2"} {
			if n != k.NodeID {
				na.WaitFor = append(na.WaitFor, model.ActivationKey{RunID: k.RunID, NodeID: n, ActivationID: "x"})
			}
		}
	}
	return na
}

// memberVariant returns fan-out member definition variant v: read-only,
// read-only with an automatic retry policy, or mutating.
func memberVariant(v int) model.NewActivation {
	na := model.NewActivation{Effect: model.ReadOnly, Reconciliation: model.RepairRequired}
	switch v % 3 {
	case 1:
		p := modelPolicy
		na.Reconciliation, na.Policy = model.IdempotentReplay, &p
	case 2:
		na.Effect = model.Mutating
	}
	return na
}
