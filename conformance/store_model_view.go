package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance/internal/model"
	"github.com/wfstore/wfstore/workflow"
)

// Comparing the adapter with the model: the adapter's durable state
// rendered as model.View renders the model's, and the translations between
// the model's types and workflow's.

// storeView renders the adapter's records of the sequence's runs the way
// model.View renders the model.
func (sq *sequence) storeView() (string, error) {
	var st model.State
	ctx := sq.ctx
	err := sq.b.View(ctx, func(r backend.ReadTx) error {
		st = model.State{}
		f, err := r.Load(ctx, backend.Lookup{Runs: sq.runs})
		if err != nil {
			return err
		}
		for _, id := range sq.runs {
			run, ok := f.Runs[id]
			if !ok {
				continue
			}
			l := run.Limits
			rv := model.RunView{ID: run.ID, Root: run.RootID, Parent: run.ParentID, Depth: int(run.Depth),
				Status: string(run.Status), Cancel: run.CancelRequestedMS != 0, Exhausted: run.ExhaustionRecorded,
				Limits: model.Limits{NodeExecutionCap: l.NodeExecutionCap, ConcurrencyCap: l.ConcurrencyCap, CycleCap: l.CycleCap, RetryCap: l.RetryCap},
				Counts: model.Counts{Attempts: run.AttemptCount, Active: run.ActiveCount, Tree: run.TreeAttemptCount, Descendants: run.DescendantCount}}
			if a := run.Authority; a != nil {
				rv.Authority = fmt.Sprintf("%d:%s", a.Generation, strings.TrimPrefix(a.DaemonInstanceID, "d-"))
			}
			st.Runs = append(st.Runs, rv)
			acts, err := r.Activations(ctx, backend.ActivationQuery{RunID: id, Limit: 1000})
			if err != nil {
				return err
			}
			var keys []backend.ActivationKey
			for _, a := range acts {
				keys = append(keys, a.Key)
				st.Activations = append(st.Activations, model.ActivationView{Key: modelKey(a.Key), Status: string(a.Status), LastAttempt: a.LastAttempt,
					Admissible: a.Admissible, Output: a.Output != nil, HasSuccessors: a.HasSuccessors})
			}
			if len(keys) > 0 {
				g, err := r.Load(ctx, backend.Lookup{Schedules: keys, Groups: keys})
				if err != nil {
					return err
				}
				for k, v := range g.Groups {
					st.Groups = append(st.Groups, model.GroupView{Controller: modelKey(k), Size: int(v.Size), Max: int(v.MaxConcurrency),
						FailFast: v.FailFast, Retired: v.RetiredMS != 0, FanIn: v.FanIn})
				}
				for k, s := range g.Schedules {
					st.Schedules = append(st.Schedules, model.ScheduleView{Key: modelKey(k), Schedule: model.Schedule{
						FailedAttempt: s.FailedAttempt, NextAttempt: s.NextAttempt, BackoffMS: s.BackoffMS, DueMS: s.DueMS - t0.UnixMilli()}})
				}
			}
			atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: id, Limit: 1000})
			if err != nil {
				return err
			}
			for _, a := range atts {
				calls, held := sq.o.state(a.Identity)
				st.Attempts = append(st.Attempts, model.AttemptView{Key: model.AttemptKey{ActivationKey: modelKey(a.Key.ActivationKey), Attempt: a.Key.Attempt},
					Status: string(a.Status), Handoff: string(a.Handoff), Effect: string(a.SideEffect),
					Receipt: receiptKind(a.Identity, a.Receipt), Calls: calls, Held: held})
			}
			ls, err := r.Leases(ctx, backend.LeaseQuery{RunID: id, Limit: 1000})
			if err != nil {
				return err
			}
			for _, l := range ls {
				st.Leases = append(st.Leases, model.AttemptKey{ActivationKey: modelKey(l.Key.ActivationKey), Attempt: l.Key.Attempt})
			}
		}
		return nil
	})
	return st.String(), err
}

func receiptKind(identity string, r []byte) string {
	switch {
	case r == nil:
		return ""
	case string(r) == string(ownerReceipt(identity)):
		return model.ReceiptOwner
	case string(r) == `{"other":"`+identity+`"}`:
		return model.ReceiptOther
	case strings.Contains(string(r), `"owner":"wfstore.workflow-child/v1"`):
		return model.ReceiptChild
	}
	return "raw:" + string(r)
}

// lineDiff shows the lines only one side has.
func lineDiff(store, mdl string) string {
	a, b := strings.Split(store, "\n"), strings.Split(mdl, "\n")
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "  store: "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "  model: "+l)
		}
	}
	return strings.Join(out, "\n") + "\nfull store state:\n" + store
}

func wfAuthority(a *model.Authority) *workflow.Authority {
	if a == nil {
		return nil
	}
	return &workflow.Authority{TargetArtifactID: "artifact", DaemonInstanceID: "d-" + a.Tag, Generation: a.Generation, FencingToken: "t-" + a.Tag}
}

func wfActivation(na model.NewActivation) workflow.NewActivation {
	out := workflow.NewActivation{
		Key:            workflow.ActivationKey{RunID: na.Key.RunID, NodeID: na.Key.NodeID, ActivationID: na.Key.ActivationID},
		Input:          json.RawMessage(`{"node":"` + na.Key.NodeID + `"}`),
		Effect:         workflow.Effect(na.Effect),
		Reconciliation: workflow.Reconciliation(na.Reconciliation),
	}
	if p := na.Policy; p != nil {
		rp := &workflow.RetryPolicy{Version: 1, MaxAttempts: p.MaxAttempts, InitialBackoff: time.Duration(p.InitialMS) * time.Millisecond,
			BackoffMultiplier: p.Multiplier, MaximumBackoff: time.Duration(p.MaximumMS) * time.Millisecond}
		if p.Unavailable {
			rp.EligibleFailures = append(rp.EligibleFailures, workflow.FailureOwnerUnavailableBeforeAcceptance)
		}
		if p.Retryable {
			rp.EligibleFailures = append(rp.EligibleFailures, workflow.FailureOwnerReportedRetryable)
		}
		out.RetryPolicy = rp
	}
	if na.Claim {
		out.Claims = []workflow.ResourceClaim{{Resource: "res", Mode: workflow.LeaseWrite}}
	}
	for _, p := range na.Predecessors {
		out.Predecessors = append(out.Predecessors, workflow.NodeRef{NodeID: p.NodeID, ActivationID: p.ActivationID})
	}
	for _, p := range na.WaitFor {
		out.WaitFor = append(out.WaitFor, workflow.NodeRef{NodeID: p.NodeID, ActivationID: p.ActivationID})
	}
	return out
}

func wfKey(k model.ActivationKey) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID}
}

func wfAttemptKey(k model.AttemptKey) workflow.AttemptKey {
	return workflow.AttemptKey{ActivationKey: wfKey(k.ActivationKey), Attempt: k.Attempt}
}

func modelKey(k workflow.ActivationKey) model.ActivationKey {
	return model.ActivationKey{RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID}
}

func modelKeys(ks []workflow.ActivationKey) []model.ActivationKey {
	var out []model.ActivationKey
	for _, k := range ks {
		out = append(out, modelKey(k))
	}
	return out
}
