package mutants

// Catalog is every seeded mutant, run by scripts/mutants.sh. Each edit's
// Find is a snippet of the clean code that occurs exactly once in its file,
// and Replace is the buggy version of it.
// TestEveryMutantAppliesToTheCurrentTree fails when a change to the code
// moves a snippet: update the snippet here, keeping the bug it seeds.
var Catalog = []Mutant{
	{
		Name: "pending-guard",
		Bug:  "prepare admits a non-pending activation",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/attempts.go",
				Find:    `if act.Status != backend.ActivationPending || run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {`,
				Replace: `if run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {`,
			},
		},
	},
	{
		Name: "cancel-gate",
		Bug:  "prepare ignores requested cancellation",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/attempts.go",
				Find:    `if act.Status != backend.ActivationPending || run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {`,
				Replace: `if act.Status != backend.ActivationPending || run.Status != backend.RunRunning {`,
			},
			{
				File: "workflow/admission.go",
				Find: `	if run.CancelRequestedMS != 0 {
		return stateErr(ErrIneligible, "workflow cancellation has been requested")
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "node-cap",
		Bug:  "node execution allowance not enforced",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	if run.AttemptCount+runMore >= run.Limits.NodeExecutionCap {
		return stateErr(ErrNodeAllowanceExhausted, "run %q has %d of %d attempts", run.ID, run.AttemptCount+runMore, run.Limits.NodeExecutionCap)
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "root-cap",
		Bug:  "root tree allowance not enforced",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	if root.TreeAttemptCount+treeMore >= root.Limits.NodeExecutionCap {
		return stateErr(ErrRootAllowanceExhausted, "root %q has %d of %d attempts", root.ID, root.TreeAttemptCount+treeMore, root.Limits.NodeExecutionCap)
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "concurrency-cap",
		Bug:  "concurrency capacity not enforced",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	if run.ActiveCount >= run.Limits.ConcurrencyCap {
		return stateErr(ErrConcurrencyCapacity, "run %q has %d active attempts (cap %d)", run.ID, run.ActiveCount, run.Limits.ConcurrencyCap)
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "exhaustion-event-twice",
		Bug:  "a second execution_allowance_exhausted event",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/runs.go",
				Find:    "\tif run.ExhaustionRecorded {\n\t\treturn false\n\t}\n",
				Replace: "",
			},
		},
	},
	{
		Name: "handoff-authority",
		Bug:  "handoff skips the authority check",
		Edits: []Edit{
			{
				File: "workflow/handoff.go",
				Find: `	if err := check.verify(*run); err != nil {
		return known{}, err
	}
`,
				Replace: "\t_ = check\n",
			},
		},
	},
	{
		Name: "handoff-cas",
		Bug:  "handoff is not a 0→1 compare-and-set",
		Edits: []Edit{
			{
				File: "workflow/handoff.go",
				Find: `			return known{run: *run, act: act, att: att}, nil
		}
		return known{}, stateErr(ErrConflict, "dispatch handoff already recorded for %s", att.Identity)
`,
				Replace: `			return known{run: *run, act: act, att: att}, nil
		}
		return known{}, errNoop
`,
			},
		},
	},
	{
		Name: "lease-release",
		Bug:  "leases never released on settle",
		Edits: []Edit{
			{
				File: "workflow/internal/state/leases.go",
				Find: `	if len(act.Claims) == 0 {
		return nil
	}
`,
				Replace: `	return nil
`,
			},
		},
	},
	{
		Name: "lease-conflict",
		Bug:  "incompatible leases granted",
		Edits: []Edit{
			{
				File: "workflow/leases.go",
				Find: `			if c.Mode == backend.LeaseWrite || l.Key.Mode == backend.LeaseWrite {
				return nil, stateErr(ErrResourceConflict, "workflow resource is already leased incompatibly: %s", c.Resource)
			}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "schedule-consume-twice",
		Bug:  "a retry schedule survives its consumption",
		Edits: []Edit{
			{
				File: "workflow/internal/state/retries.go",
				Find: `	Remove(w, sched)
	w.emit(run, event.AutomaticRetryConsumedPayload(schedulePayload(sched)), at)
`,
				Replace: `	w.emit(run, event.AutomaticRetryConsumedPayload(schedulePayload(sched)), at)
`,
			},
		},
	},
	{
		Name: "consume-abandoned",
		Bug:  "a schedule consumes an abandoned latest attempt",
		Edits: []Edit{
			{
				File:    "workflow/retry.go",
				Find:    `return st == backend.AttemptFailed`,
				Replace: `return st == backend.AttemptFailed || st == backend.AttemptAbandoned`,
			},
		},
	},
	{
		Name: "retry-downstream",
		Bug:  "retry allowed after downstream activation",
		Edits: []Edit{
			{
				File: "workflow/retry.go",
				Find: `	case act.HasSuccessors:
		return scheduleStale, discardSuccessorsExist
`,
				Replace: "",
			},
			{
				File: "workflow/retry.go",
				Find: `	if act.HasSuccessors {
		return RetryRequeue{}, stateErr(ErrIneligible, "workflow retry is unsafe after downstream activation")
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "join-release-on-first",
		Bug:  "a join is released by the first of its predecessors to complete, not the last",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/activations.go",
				Find:    "\tjoin.OpenWaits--\n",
				Replace: "\tjoin.OpenWaits = 0\n",
			},
		},
	},
	{
		Name: "join-open-counts-completed",
		Bug:  "a join added counts its completed predecessors as open, so it waits for completions that already happened",
		Edits: []Edit{
			{
				File: "workflow/joins.go",
				Find: `		if p.Status == backend.ActivationCompleted {
			continue
		}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "join-ignores-failed-predecessor",
		Bug:  "a predecessor failing with no retry pending leaves its join waiting forever",
		Edits: []Edit{
			{
				File:    "workflow/joins.go",
				Find:    `if pred.Status != backend.ActivationCancelled && (pred.Status != backend.ActivationFailed || scheduled) {`,
				Replace: `if _ = scheduled; pred.Status != backend.ActivationCancelled {`,
			},
		},
	},
	{
		Name: "join-cancelled-despite-pending-retry",
		Bug:  "a predecessor failing with an automatic retry pending cancels its join",
		Edits: []Edit{
			{
				File:    "workflow/joins.go",
				Find:    `if pred.Status != backend.ActivationCancelled && (pred.Status != backend.ActivationFailed || scheduled) {`,
				Replace: `if pred.Status != backend.ActivationCancelled && pred.Status != backend.ActivationFailed && scheduled {`,
			},
		},
	},
	{
		Name: "join-ignores-cancelled-predecessor",
		Bug:  "a cancelled predecessor leaves its join waiting",
		Edits: []Edit{
			{
				File:    "workflow/joins.go",
				Find:    `if pred.Status != backend.ActivationCancelled && (pred.Status != backend.ActivationFailed || scheduled) {`,
				Replace: `if pred.Status != backend.ActivationFailed || scheduled {`,
			},
		},
	},
	{
		Name: "join-retry-downstream",
		Bug:  "an explicit retry of a predecessor whose join was cancelled is allowed",
		Edits: []Edit{
			{
				File:    "workflow/retry.go",
				Find:    `if sched == nil && len(act.Joins) > 0 {`,
				Replace: `if false && sched == nil && len(act.Joins) > 0 {`,
			},
		},
	},
	{
		Name: "join-wait-for-unchecked",
		Bug:  "a join may wait for itself or name an activation twice",
		Edits: []Edit{
			{
				File:    "workflow/joins.go",
				Find:    `		if p.NodeID == self.NodeID && p.ActivationID == self.ActivationID {`,
				Replace: `		if false {`,
			},
			{
				File:    "workflow/joins.go",
				Find:    `		if refs[i] == refs[i-1] {`,
				Replace: `		if false {`,
			},
		},
	},
	{
		Name: "join-not-released-on-completion",
		Bug:  "a completion does not note the joins waiting for it",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/activations.go",
				Find:    `		w.WaitForSettled(*act, as == backend.ActivationCompleted, at)`,
				Replace: `		w.WaitForSettled(*act, as == backend.ActivationCompleted && false, at)`,
			},
		},
	},
	{
		Name: "receipt-conflict",
		Bug:  "a conflicting receipt overwrites the stored one",
		Edits: []Edit{
			{
				File: "workflow/receipt.go",
				Find: `		}
		return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
`,
				Replace: `		}
		att.Receipt = rc
		state.Replace(w, att)
		return nil
`,
			},
		},
	},
	{
		Name: "never-dispatched-proof",
		Bug:  "reconcile ignores the never-dispatched proof",
		Edits: []Edit{
			{
				File: "workflow/reconcile.go",
				Find: `		case att.Handoff == backend.HandoffPending:
			sum.NeverDispatched = append(sum.NeverDispatched, attemptRef(att))
			continue
`,
				Replace: "",
			},
			{
				File:    "workflow/reconcile.go",
				Find:    ` || att.Receipt != nil || att.Handoff == backend.HandoffPending {`,
				Replace: ` || att.Receipt != nil {`,
			},
		},
	},
	{
		Name: "prepare-attempt-effect",
		Bug:  "low-level prepare ignores a different side effect",
		Edits: []Edit{
			{
				File:    "workflow/lowlevel.go",
				Find:    ` && bytes.Equal(old.Intent, intent) && old.SideEffect == effect {`,
				Replace: ` && bytes.Equal(old.Intent, intent) {`,
			},
		},
	},
	{
		Name: "known-unchecked",
		Bug:  "handoff/receipt decide on known records without expecting them unchanged",
		Edits: []Edit{
			{
				File:    "workflow/known.go",
				Find:    `tx.Apply(ctx, backend.Changes{Expect: exp})`,
				Replace: `tx.Apply(ctx, backend.Changes{})`,
			},
		},
	},
	{
		Name: "prepare-authority",
		Bug:  "prepare skips the authority check",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	if err := check.verify(run); err != nil {
		return nil, known{}, err
	}
	act, ok := g.Activations[k]
`,
				Replace: `	_ = check
	act, ok := g.Activations[k]
`,
			},
		},
	},
	{
		Name: "receipt-authority",
		Bug:  "receipt persisted without the authority check",
		Edits: []Edit{
			{
				File: "workflow/receipt.go",
				Find: `	if err := check.verify(*run); err != nil {
		return err
	}
	if !found {
`,
				Replace: `	_ = check
	if !found {
`,
			},
		},
	},
	{
		Name: "exhaustion-authority",
		Bug:  "exhaustion recorded without the authority check",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `		if err := check.verify(run); err != nil {
			return err
		}
		root := run
`,
				Replace: `		root := run
`,
			},
		},
	},
	{
		Name: "redispatch-authority",
		Bug:  "redispatch hands off and persists receipts without authority checks",
		Edits: []Edit{
			{
				File: "workflow/reconcile.go",
				Find: `		att, check := pa.att, pa.check
		if att.Receipt != nil`,
				Replace: `		att, check := pa.att, authorityCheck{}
		if att.Receipt != nil`,
			},
		},
	},
	{
		Name: "reconcile-authority",
		Bug:  "reconciliation writes receipts and repair_required without authority checks",
		Edits: []Edit{
			{
				File: "workflow/reconcile.go",
				Find: `		att, check := pa.att, pa.check
		switch {`,
				Replace: `		att, check := pa.att, authorityCheck{}
		switch {`,
			},
		},
	},
	{
		Name: "retirement-ignored",
		Bug:  "prepare, handoff and owner admission ignore a pending fan-out retirement",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	var group *backend.FanOutGroup
	if act.Group != nil {
		if v, ok := g.Groups[act.Group.Controller]; ok {
			group = &v
		}
		if group != nil && group.Retiring {
			return nil, known{}, errNoop
		}
	}
`,
				Replace: "",
			},
			{
				File: "workflow/handoff.go",
				Find: `	if act.Group == nil {
		return false, nil
	}
`,
				Replace: `	return false, nil
`,
			},
		},
	},
	{
		Name: "authority-partial-compare",
		Bug:  "authorities compared by generation and daemon id only",
		Edits: []Edit{
			{
				File:    "workflow/authority.go",
				Find:    `return a == b`,
				Replace: `return a.Generation == b.Generation && a.DaemonInstanceID == b.DaemonInstanceID`,
			},
		},
	},
	{
		Name: "handoff-refusal-fatal",
		Bug:  "a run-state refusal at handoff stops the Dispatch batch",
		Edits: []Edit{
			{
				File: "workflow/dispatch.go",
				Find: `return AttemptRef{}, outRejected, err
		case errors.Is(err, ErrConflict):`,
				Replace: `return AttemptRef{}, outFailed, err
		case errors.Is(err, ErrConflict):`,
			},
		},
	},
	{
		Name: "capacity-before-allowance",
		Bug:  "discovery calls a run full before its allowance and deadline checks",
		Edits: []Edit{
			{
				File:    "workflow/dispatch.go",
				Find:    `root, ok := runs[run.RootID]`,
				Replace: `_, ok = runs[run.RootID]`,
			},
			{
				File: "workflow/dispatch.go",
				Find: `			if ok {
				refusedFirst = act.LastAttempt == ^uint32(0) ||
					limitsBeforeCapacity(run, root, act.LastAttempt+1, at, takenRun[id], takenTree[run.RootID]) != nil
			}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "discovery-unbounded",
		Bug:  "discovery reads the pending index without a row budget",
		Edits: []Edit{
			{
				File:    "workflow/dispatch.go",
				Find:    `rowsLeft := discoveryRowsPerLimit * limit`,
				Replace: `rowsLeft := 1 << 30`,
			},
		},
	},
	{
		Name: "discovery-restarts",
		Bug:  "every pass over all runs restarts at the beginning of the index",
		Edits: []Edit{
			{
				File:    "workflow/dispatch.go",
				Find:    `c.pos = p`,
				Replace: `c.pos = pendingPos{}`,
			},
		},
	},
	{
		Name: "deadline-inclusive",
		Bug:  "work and attempts still accepted at the deadline millisecond",
		Edits: []Edit{
			{
				File:    "workflow/admission.go",
				Find:    `return deadlineMS != 0 && at >= deadlineMS`,
				Replace: `return deadlineMS != 0 && at > deadlineMS`,
			},
		},
	},
	{
		Name: "intent-checksum-unverified",
		Bug:  "DispatchIntent returns an intent that fails its checksum",
		Edits: []Edit{
			{
				File: "workflow/inspect.go",
				Find: `	if Checksum(att.Intent) != att.IntentChecksum {
		return out, stateErr(ErrCorrupt, "dispatch intent of %s does not match its checksum", identity)
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "exhaustion-parks-forever",
		Bug:  "an allowance increase never readmits exhausted work",
		Edits: []Edit{
			{
				File: "workflow/internal/state/status.go",
				Find: `	return run.AttemptCount >= run.Limits.NodeExecutionCap ||
		(run.RootID == run.ID && run.TreeAttemptCount >= run.Limits.NodeExecutionCap)
`,
				Replace: `	return true
`,
			},
		},
	},
	{
		Name: "increase-raises-root",
		Bug:  "a child's allowance increase raises its root's cap too",
		Edits: []Edit{
			{
				File: "workflow/allowance_increase.go",
				Find: `		state.IncreaseAllowance(w, &run, targetCap, at)
`,
				Replace: `		state.IncreaseAllowance(w, &run, targetCap, at)
		if run.RootID != run.ID {
			root, err := backend.GetRun(ctx, tx, run.RootID)
			if err != nil {
				return err
			}
			root.Limits.NodeExecutionCap += targetCap - expectedCap
			state.Replace(w, root)
		}
`,
			},
		},
	},
	{
		Name: "cancelled-unknown-to-repair",
		Bug:  "an Unknown observation under cancellation goes to repair_required",
		Edits: []Edit{
			{
				File: "workflow/observe.go",
				Find: `				}
			default:
				observed, kind = kind, ObservedCancelled
`,
				Replace: `				}
			default:
				if kind != ObservedUnknown {
					observed, kind = kind, ObservedCancelled
				}
`,
			},
		},
	},
	{
		Name: "verify-lease-holder",
		Bug:  "Verify accepts an unreleased lease of a settled attempt",
		Edits: []Edit{
			{
				File:    "workflow/verify.go",
				Find:    `att, ok := attempts[k.AttemptKey]`,
				Replace: `_, ok := attempts[k.AttemptKey]`,
			},
			{
				File: "workflow/verify.go",
				Find: `			case !isLive(att.Status):
				v.add(CheckLeaseHolder, id, subject, "unreleased, but its attempt is %s", att.Status)
`,
				Replace: "",
			},
		},
	},
	{
		Name: "receipt-pass-skips-snapshot",
		Bug:  "the unowned receipt-backed pass ignores an authority change",
		Edits: []Edit{
			{
				File: "workflow/receiptpass.go",
				Find: `			if opts.Authority == nil {
				c = authorityCheck{mode: authSnapshot, want: runs[p.att.Key.RunID].Authority, what: "receipt-backed reconciliation"}
			}
`,
				Replace: "\t\t\t_ = runs\n",
			},
		},
	},
	{
		Name: "tree-cancel-skips-children",
		Bug:  "tree cancellation records the intent on the root only",
		Edits: []Edit{
			{
				File: "workflow/cancel.go",
				Find: `		links, err := treeLinks(ctx, tx, w, rootID)
		if err != nil {
			return err
		}
		ids := make([]string, len(links))
		for i, l := range links {
			ids[i] = l.ChildRunID
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: ids})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if r, ok := f.Runs[id]; ok {
				runs = append(runs, &r)
			}
		}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "finalize-ignores-children",
		Bug:  "a cancelling run finalises while its child runs still run",
		Edits: []Edit{
			{
				File: "workflow/settle.go",
				Find: `	if open, err := hasOpenChildRun(ctx, tx, w, *run); err != nil || open {
		return false, err
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "fanout-settled-accounting",
		Bug:  "a retried fan-out member is requeued without adjusting the group's accounting",
		Edits: []Edit{
			{
				File: "workflow/fanout.go",
				Find: `	state.ReopenMember(&g)
`,
				Replace: `	return nil
	state.ReopenMember(&g)
`,
			},
		},
	},
	{
		Name: "fanout-failfast-skips-siblings",
		Bug:  "a fail-fast member failure leaves its siblings running",
		Edits: []Edit{
			{
				File: "workflow/fanout.go",
				Find: `	if err := cancelSiblings(ctx, txn{Tx: tx, W: w, At: at}, run, &g, act); err != nil {
		return err
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "prune-live-run",
		Bug:  "prune skips the terminal check on the run and its tree",
		Edits: []Edit{
			{
				File:    "workflow/prune.go",
				Find:    `			if ok, err := prunable(ctx, r, run); err != nil || !ok {`,
				Replace: `			if ok, err := true, error(nil); err != nil || !ok {`,
			},
			{
				File:    "workflow/prune.go",
				Find:    `			if ok, err := prunable(ctx, tx, run); err != nil || !ok {`,
				Replace: `			if ok, err := true, error(nil); err != nil || !ok {`,
			},
			{
				File: "workflow/prune.go",
				Find: `	root := run.RootID
`,
				Replace: `	return nil
	root := run.RootID
`,
			},
		},
	},
	{
		Name:  "sqlite-expect-ignored",
		Bug:   "the SQLite adapter's Expect never fails",
		Suite: "./sqlite/",
		Edits: []Edit{
			{
				File: "sqlite/write.go",
				Find: `	if im, ok := imageOf(&t.readTx, kd, kd.key(want)); ok {
`,
				Replace: `	return nil
	if im, ok := imageOf(&t.readTx, kd, kd.key(want)); ok {
`,
			},
		},
	},
	{
		Name:  "etcd-timeout-is-failure",
		Bug:   "the etcd adapter reports a commit whose answer was lost as failed, without learning whether it applied",
		Suite: "./etcd/",
		Edits: []Edit{
			{
				File: "etcd/commit.go",
				Find: `	t.unanswered = err
	return b.resolve(ctx, s, n, err)
`,
				Replace: `	return 0, fmt.Errorf("etcd: commit: %w", err)
`,
			},
		},
	},
	{
		Name: "batch-refusal-fails-prepare",
		Bug:  "in batch mode one candidate's refusal fails the whole prepare transaction",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `			case err != nil:
				w.Truncate(m)
				res[i].err = err
				stopped = stopsPass(err)
			default:
				res[i].p = p`,
				Replace: `			case err != nil:
				return err
			default:
				res[i].p = p`,
			},
		},
	},
	{
		Name: "batch-overlay-stale",
		Bug:  "in batch mode a candidate is decided on its run as read, without the batch's earlier decisions",
		Edits: []Edit{
			{
				File: "workflow/admission.go",
				Find: `	state.Replace(w, run)
	g.Runs[run.ID] = run
`,
				Replace: `	state.Replace(w, run)
`,
			},
		},
	},
	{
		Name: "batch-refused-handoff-dispatched",
		Bug:  "in batch mode the owner is called for an attempt whose handoff was refused",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `		case errors.Is(err, ErrIneligible):
			sum.Rejected = append(sum.Rejected, Rejection{Key: r.p.Activation.Key, Err: err})`,
				Replace: `		case errors.Is(err, ErrIneligible):
			out = append(out, r)`,
			},
		},
	},
	{
		Name: "batch-owner-error-is-receipt",
		Bug:  "in batch mode a receipt is recorded for an attempt the owner refused",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `		if err != nil {
			err = fmt.Errorf("%w: dispatch %s: %w", ErrOwner, r.p.Identity, err)
		} else if rc, err = ownerJSON(`,
				Replace: `		if err != nil {
			rc, err = []byte(` + "`" + `{"refused":true}` + "`" + `), nil
		} else if rc, err = ownerJSON(`,
			},
		},
	},
	{
		Name: "batch-known-unexpected",
		Bug:  "in batch mode handoff and receipt decide on the previous step's records without expecting them unchanged",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `			if err := tx.Apply(ctx, backend.Changes{Expect: exp}); err != nil {
				return err
			}
			// Decide on copies`,
				Replace: `			_ = exp
			// Decide on copies`,
			},
		},
	},
	{
		Name: "prune-audit-last-invocation",
		Bug:  "a prune finished by a rerun reports only the rerun's deletions in run_pruned, not the counts its marker recorded",
		Edits: []Edit{
			{
				File: "workflow/prune.go",
				Find: `state.MarkPruned(w, &run, plan, at)`,
				Replace: `_ = plan
				state.MarkPruned(w, &run, c, at)`,
			},
		},
	},
	{
		Name: "verify-partial-prune",
		Bug:  "verify does not recognise a run being pruned (run_prune_started) and reports its attempt counter",
		Edits: []Edit{
			{
				File:    "workflow/verify.go",
				Find:    `(last[0].Type == string(event.RunPruned) || last[0].Type == string(event.RunPruneStarted))`,
				Replace: `last[0].Type == string(event.RunPruned)`,
			},
		},
	},
	{
		Name: "owner-limit-without-envelope",
		Bug:  "owner JSON is held to the document limits, so the event that wraps a document at the limit does not fit",
		Edits: []Edit{
			{
				File:    "workflow/json.go",
				Find:    `var ownerLimits = canonical.Limits{Bytes: MaxOwnerJSONBytes, Depth: MaxOwnerJSONDepth}`,
				Replace: `var ownerLimits = canonical.Limits{Bytes: MaxJSONBytes, Depth: MaxJSONDepth}`,
			},
		},
	},
	{
		Name: "unstorable-receipt-left-prepared",
		Bug:  "an owner's receipt the store cannot keep is refused and its attempt left handed off, to be asked for again",
		Edits: []Edit{
			{
				File:    "workflow/receipt.go",
				Find:    `		return s.settleUnstorableReceipt(ctx, ref, receipt, err, check, now)`,
				Replace: `		return err`,
			},
		},
	},
	{
		Name: "unstorable-observation-applied",
		Bug:  "an owner's observation the store cannot keep is applied without its output",
		Edits: []Edit{
			{
				File:    "workflow/observe.go",
				Find:    `		if v.unstorable != nil && kind != ObservedCancelled {`,
				Replace: `		if false {`,
			},
		},
	},
	{
		Name:  "etcd-frozen-member-kept",
		Bug:   "the etcd adapter keeps sending requests to a member that stopped answering",
		Suite: "./etcd/",
		Tests: "TestFrozenMemberCostsSeconds",
		Edits: []Edit{
			{
				File:    "etcd/endpoints.go",
				Find:    `	g.cli.SetEndpoints(answered...)`,
				Replace: `	_ = answered`,
			},
		},
	},
	{
		Name: "timeout-on-settled",
		Bug:  "timeout applied to a settled attempt",
		Edits: []Edit{
			{
				File:    "workflow/timeout.go",
				Find:    `if (att.Status != backend.AttemptAdmitted && att.Status != backend.AttemptRunning) || att.Receipt == nil {`,
				Replace: `if att.Receipt == nil {`,
			},
		},
	},
	{
		Name: "timeout-retried",
		Bug:  "timeout accepted by automatic retry",
		Edits: []Edit{
			{
				File:    "workflow/timeout.go",
				Find:    `*att, FailureTerminalTimeout)`,
				Replace: `*att, FailureOwnerReportedRetryable)`,
			},
		},
	},
	{
		Name: "stuck-admitted-aged-from-prepared",
		Bug:  "the stuck-work query ages an admitted attempt from its prepared time, not its admission",
		Edits: []Edit{
			{
				File:    "workflow/stuck.go",
				Find:    `{StuckAdmitted, backend.AttemptAdmitted, func(a backend.Attempt, _ backend.Run) int64 { return a.AdmittedMS }},`,
				Replace: `{StuckAdmitted, backend.AttemptAdmitted, func(a backend.Attempt, _ backend.Run) int64 { return a.PreparedMS }},`,
			},
		},
	},
	{
		Name: "timeout-late-observation-ignored",
		Bug:  "a later observation of a timed-out repair_required attempt is recorded but never settles it",
		Edits: []Edit{
			{
				File: "workflow/timeout.go",
				Find: `	if att.Status != backend.AttemptRepairRequired {
		return false, nil
	}`,
				Replace: `	if att.Status != backend.AttemptRepairRequired || true {
		return false, nil
	}`,
			},
		},
	},
	{
		Name: "batch-owner-error-goes-on",
		Bug:  "in batch mode an owner failure does not stop further owner calls",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `		if out[i].Err != nil {
			o.stop()
		}`,
				Replace: `		_ = o.stop`,
			},
		},
	},
	{
		Name: "batch-stale-authority-ignored",
		Bug:  "in batch mode a stale authority at preparation or handoff refuses only its candidate and the pass goes on",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `				stopped = stopsPass(err)
			default:
				res[i].p = p`,
				Replace: `				stopped = stopsPass(err) && !errors.Is(err, ErrStaleAuthority)
			default:
				res[i].p = p`,
			},
			{
				File:    "workflow/dispatch_batch.go",
				Find:    `				stopped = !errors.Is(err, ErrIneligible) && !errors.Is(err, ErrConflict)`,
				Replace: `				stopped = !errors.Is(err, ErrIneligible) && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrStaleAuthority)`,
			},
		},
	},
	{
		Name: "exhausted-arrival-invisible",
		Bug:  "work added to an exhausted run stays out of discovery and is reported in no list",
		Edits: []Edit{
			{
				File: "workflow/internal/state/status.go",
				Find: `	run.ExhaustionRecorded = false
	return Admissible(run, act, group)`,
				Replace: `	return Admissible(run, act, group)`,
			},
		},
	},
	{
		Name: "release-without-token-check",
		Bug:  "a stopped batch releases a handoff that a recovery pass re-dispatched since (the holder token is not compared)",
		Edits: []Edit{
			{
				File:    "workflow/handoff_release.go",
				Find:    `				att.Handoff != backend.HandoffRecorded || att.HandoffToken != h.token {`,
				Replace: `				att.Handoff != backend.HandoffRecorded {`,
			},
		},
	},
	{
		Name: "unoffered-handoffs-kept",
		Bug:  "a stopped batch keeps the handoffs it recorded and never offered: they read as maybe dispatched",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `	if len(held) > 0 {
		stops = append(stops, s.releaseUnoffered(ctx, held, now, sum)...)
	}`,
				Replace: ``,
			},
		},
	},
	{
		Name: "receipt-pass-cancel-skips-owner",
		Bug:  "the receipt-backed pass applies Cancelled to a cancelling run's attempts without asking the owner, whose work may still run",
		Edits: []Edit{
			{
				File: "workflow/receiptpass.go",
				Find: `		obs, err := o.Observe(ctx, toAttempt(att))
`,
				Replace: `		obs, err := o.Observe(ctx, toAttempt(att))
		if runs[att.Key.RunID].CancelRequestedMS != 0 {
			obs, err = Observation{Kind: ObservedCancelled}, nil
		}
`,
			},
		},
	},
	{
		Name: "receipt-pass-skips-cancelling",
		Bug:  "the receipt-backed pass does not select cancelling attempts, so a signalled cancellation never settles",
		Edits: []Edit{
			{
				File: "workflow/receiptpass.go",
				Find: `backend.AttemptRunning,
	backend.AttemptCancelling, backend.AttemptSiblingCancelling}`,
				Replace: `backend.AttemptRunning,
	backend.AttemptSiblingCancelling}`,
			},
		},
	},
	{
		Name: "receipt-pass-skips-sibling-cancelling",
		Bug:  "the receipt-backed pass does not select sibling_cancelling attempts, so a fail-fast group's stopped siblings never settle",
		Edits: []Edit{
			{
				File:    "workflow/receiptpass.go",
				Find:    `backend.AttemptCancelling, backend.AttemptSiblingCancelling}`,
				Replace: `backend.AttemptCancelling}`,
			},
		},
	},
	{
		Name: "receipt-pass-error-stops-pass",
		Bug:  "one attempt's failing observation fails the whole receipt-backed pass",
		Edits: []Edit{
			{
				File: "workflow/receiptpass.go",
				Find: `		if err != nil {
			p.out.Err = fmt.Errorf("%w: observe %s: %w", ErrOwner, att.Identity, err)
			plan = append(plan, p)
			continue
		}`,
				Replace: `		if err != nil {
			return sum, fmt.Errorf("%w: observe %s: %w", ErrOwner, att.Identity, err)
		}`,
			},
		},
	},
	{
		Name: "receipt-pass-no-claims",
		Bug:  "concurrent receipt-backed passes of one Store both ask the owner about every attempt",
		Edits: []Edit{
			{
				File:    "workflow/receiptpass.go",
				Find:    `		if !mine[i] {`,
				Replace: `		if false && !mine[i] {`,
			},
			{
				File:    "workflow/receiptpass.go",
				Find:    ` && !s.observing.has(a.Identity) && !s.foreign.hasObserving(a.Identity) {`,
				Replace: ` && !s.foreign.hasObserving(a.Identity) {`,
			},
		},
	},
	{
		Name:  "runner-wake-armed-after-pass",
		Bug:   "the runner arms its wake-up after the pass, so work that arrives during a pass that found nothing waits for the poll",
		Suite: RunnerSuite,
		Tests: "TestWorkArrivingDuringAnIdlePassWakesTheRunner|TestWakesOnInProcessAdd",
		Edits: []Edit{
			{
				File: "runner/runner.go",
				Find: `		wake.arm()
		var progress bool
`,
				Replace: `		var progress bool
`,
			},
			{
				File: "runner/runner.go",
				Find: `		if progress {
			backoff = r.cfg.minPoll
			continue
		}
`,
				Replace: `		wake.arm()
		if progress {
			backoff = r.cfg.minPoll
			continue
		}
`,
			},
		},
	},
	{
		Name: "cancel-running-settles",
		Bug:  "an owner's report that a cancelled run's work still runs settles the attempt as cancelled (its leases released while the work runs)",
		Edits: []Edit{
			{
				File: "workflow/observe.go",
				Find: `			switch kind {
			case ObservedAdmitted, ObservedRunning, ObservedDeferred:
				if att.Status == backend.AttemptCancelling {
					return errNoop
				}
			default:
				observed, kind = kind, ObservedCancelled
			}`,
				Replace: `			observed, kind = kind, ObservedCancelled`,
			},
		},
	},
	{
		Name: "cancel-event-drops-observation",
		Bug:  "a cancelled run's attempt that finished anyway is settled cancelled without what the owner observed on record",
		Edits: []Edit{
			{
				File:    "workflow/observe.go",
				Find:    `p := event.AttemptCancelledPayload{Observed: observed}`,
				Replace: `p := event.AttemptCancelledPayload{}`,
			},
		},
	},
	{
		Name: "cancel-unobserved-without-signal",
		Bug:  "an attempt is settled as signalled-not-observed although no cancellation signal was recorded",
		Edits: []Edit{
			{
				File: "workflow/cancel.go",
				Find: `		case backend.AttemptAdmitted, backend.AttemptRunning:
			if how == SignalledNotObserved {`,
				Replace: `		case backend.AttemptAdmitted, backend.AttemptRunning:
			if false {`,
			},
		},
	},
	{
		Name:  "runner-signal-recorded-before-sent",
		Bug:   "the runner records the cancellation signal before the owner's Cancel returned, so a stop or a Cancel error between the two leaves an owner that was never told marked as told",
		Suite: RunnerSuite,
		Tests: "TestCancellationIsSignalledBeforeItIsRecorded|TestFailingCancelIsRetriedWithBackoff",
		Edits: []Edit{
			{
				File: "runner/cancel.go",
				Find: `	var err error
	r.shim.traced(ctx, "cancel", attemptAttrs(a.Key, a.Identity), func(ctx context.Context) error { err = c.canceller.Cancel(ctx, a.Identity); return err })
`,
				Replace: `	if err := r.store.Engine().MarkCancellationSignalled(ctx, a.Identity, r.cfg.clock.Now()); err != nil {
		return 0, ignoreIneligible(err)
	}
	var err error
	r.shim.traced(ctx, "cancel", attemptAttrs(a.Key, a.Identity), func(ctx context.Context) error { err = c.canceller.Cancel(ctx, a.Identity); return err })
`,
			},
		},
	},
	{
		Name: "completion-after-success-only",
		Bug:  "completion checked only after success: a run whose last open activation is cancelled or repaired stays running",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/batch.go",
				Find:    `		if isActive(r.Status) {`,
				Replace: `		if r.Status != backend.AttemptSucceeded {`,
			},
			{
				File:    "workflow/internal/state/batch.go",
				Find:    `		if !activationSettled(r.Status) {`,
				Replace: `		if r.Status != backend.ActivationCompleted {`,
			},
			{
				File: "workflow/internal/state/batch.go",
				Find: `	case backend.RetrySchedule:
		runID = r.Key.RunID
`,
				Replace: "",
			},
		},
	},
	{
		Name: "completion-ignores-schedule",
		Bug:  "completion ignores a pending retry schedule of another activation",
		Edits: []Edit{
			{
				File: "workflow/settle.go",
				Find: `	if due, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: 1}); err != nil || len(due) > 0 {
		return false, err
	}
`,
				Replace: `	_ = math.MaxInt64
`,
			},
		},
	},
	{
		Name: "tree-cancel-fails-to-cancelled",
		Bug:  "a failed run that tree cancellation reached becomes cancelled once quiescent",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/runs.go",
				Find:    `	if run.CancelRequestedMS == 0 || RunTerminal(run.Status) || run.ActiveCount > 0 {`,
				Replace: `	if run.CancelRequestedMS == 0 || run.Status == backend.RunCancelled || run.Status == backend.RunCompleted || run.ActiveCount > 0 {`,
			},
		},
	},
	{
		Name: "tree-cancel-keeps-schedules",
		Bug:  "tree cancellation leaves a failed run's retry schedules in place",
		Edits: []Edit{
			{
				File: "workflow/cancel.go",
				Find: `			if r.Status == backend.RunFailed {
				if err := discardSchedules(ctx, tx, w, r, at); err != nil {
					return err
				}
			}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "prune-failed-with-schedule",
		Bug:  "prune accepts a failed run whose retry schedule can still requeue it",
		Edits: []Edit{
			{
				File:    "workflow/prune.go",
				Find:    `		return len(due) == 0, err`,
				Replace: `		return due != nil || true, err`,
			},
		},
	},
	{
		Name: "wait-all-fails-a-retrying-member",
		Bug:  "a wait-all fan-out records fan_out_failed for a member whose automatic retry is still pending",
		Edits: []Edit{
			{
				File: "workflow/fanout.go",
				Find: `	failed = slices.DeleteFunc(failed, func(i int64) bool {
		_, pending := f.Schedules[members[i].Key]
		return pending
	})
`,
				Replace: `	_, _ = f, slices.DeleteFunc[[]int64]
`,
			},
		},
	},
	{
		Name: "summary-hides-retry-due",
		Bug:  "a failed run's summary does not tell that an automatic retry is due",
		Edits: []Edit{
			{
				File:    "workflow/inspect.go",
				Find:    `		if len(next) > 0 {`,
				Replace: `		if len(next) < 0 {`,
			},
		},
	},
	{
		Name: "completion-ignores-failed-activation",
		Bug:  "a run whose sibling's retry succeeded completes although another activation failed for good",
		Edits: []Edit{
			{
				File: "workflow/settle.go",
				Find: `		case backend.ActivationFailed:
			failed = true
`,
				Replace: `		case backend.ActivationFailed:
			failed = false
`,
			},
		},
	},
	{
		Name: "work-counts-never-capped",
		Bug:  "the work counts report a count cut at its bound as exact",
		Edits: []Edit{
			{
				File:    "workflow/workcounts.go",
				Find:    `	if n < int64(bound) {`,
				Replace: `	if n <= int64(bound) {`,
			},
		},
	},
	{
		Name:  "runner-not-found-counted-as-error",
		Bug:   "a transaction that looked up something that does not exist is counted as result=error",
		Suite: RunnerSuite,
		Tests: "TestNotFoundLookupsAreNotCountedAsErrors",
		Edits: []Edit{
			{
				File:    "runner/telemetry.go",
				Find:    `	case errors.Is(ti.Err, workflow.ErrNotFound), errors.Is(ti.Err, backend.ErrNotFound):`,
				Replace: `	case errors.Is(ti.Err, workflow.ErrInvalidInput):`,
			},
		},
	},
	{
		Name:  "runner-work-gauges-read-once",
		Bug:   "the runner reads the work counts once and never again, so the gauges freeze",
		Suite: RunnerSuite,
		Tests: "TestWorkGaugesMatchAnIndependentCountOfTheStore",
		Edits: []Edit{
			{
				File:    "runner/workmetrics.go",
				Find:    `	w.nextAt = now.Add(w.every)`,
				Replace: `	w.nextAt = now.Add(1000 * time.Hour)`,
			},
		},
	},
	{
		Name: "sibling-running-settles",
		Bug:  "an owner's report that a fail-fast fan-out's stopped sibling still runs settles it as cancelled (its leases released while the work runs)",
		Edits: []Edit{
			{
				File: "workflow/observe.go",
				Find: `			switch kind {
			case ObservedAdmitted, ObservedRunning, ObservedDeferred:
				return errNoop
			default:
				observed, kind = kind, ObservedCancelled
			}`,
				Replace: `			kind = ObservedCancelled`,
			},
		},
	},
	{
		Name: "orphan-signalled-left-in-flight",
		Bug:  "an orphaned-cancellation settlement leaves a signalled attempt without a receipt cancelling forever, as if its admission were in flight",
		Edits: []Edit{
			{
				File:    "workflow/cancel.go",
				Find:    `if att.Status == backend.AttemptPrepared && att.Receipt == nil && att.Handoff == backend.HandoffRecorded {`,
				Replace: `if att.Receipt == nil && att.Handoff == backend.HandoffRecorded {`,
			},
		},
	},
	{
		Name:  "runner-sibling-not-cancelled",
		Bug:   "the runner never tells the owner to cancel the siblings a fail-fast fan-out stopped",
		Suite: RunnerSuite,
		Tests: "TestFailFastSiblingsAreCancelledThroughTheCanceller",
		Edits: []Edit{
			{
				File:    "runner/cancel.go",
				Find:    `	n, err := r.siblings(ctx, c)`,
				Replace: `	n, err := 0, error(nil)`,
			},
		},
	},
	{
		Name:  "runner-orphan-settled-before-timeout",
		Bug:   "the runner settles a cancelling attempt without a receipt as orphaned without waiting for its attempt timeout, while its dispatcher may still be in the owner call",
		Suite: RunnerSuite,
		Tests: "TestOrphanedCancellationIsSettledAfterTheAttemptTimeout",
		Edits: []Edit{
			{
				File:    "runner/cancel.go",
				Find:    `if run.CancelRequestedAt.IsZero() || now.Before(run.CancelRequestedAt.Add(timeout)) {`,
				Replace: `if run.CancelRequestedAt.IsZero() {`,
			},
		},
	},
	{
		Name:  "runner-heal-ignores-own-token",
		Bug:   "a mutating attempt whose handoff commit answer was lost waits for a restart although the re-read shows this runner's own holder token",
		Suite: RunnerSuite,
		Tests: "TestUnknownCommitOutcomesHealWithoutARestart",
		Edits: []Edit{
			{
				File:    "runner/heal.go",
				Find:    `if token != "" && a.HandoffToken == token {`,
				Replace: `if false {`,
			},
		},
	},
	{
		Name:  "runner-heal-any-token",
		Bug:   "a mutating attempt whose handoff commit answer was lost is handed to the owner even when the recorded handoff carries another holder's token",
		Suite: RunnerSuite,
		Tests: "TestLostHandoffOfAnotherHolderIsNotDispatched",
		Edits: []Edit{
			{
				File:    "runner/heal.go",
				Find:    `if token != "" && a.HandoffToken == token {`,
				Replace: `if token != "" {`,
			},
		},
	},
	{
		Name:  "runner-no-probe-after-owner-error",
		Bug:   "after an owner error the next batch-mode pass hands off a whole batch again",
		Suite: RunnerSuite,
		Tests: "TestAfterAnOwnerErrorTheNextPassProbesWithOneAttempt",
		Edits: []Edit{
			{
				File:    "runner/probe.go",
				Find:    `if r.probing && opts.BatchSize > 1 {`,
				Replace: `if false {`,
			},
		},
	},
	{
		Name:  "runner-attempt-span-misses-owner-failure",
		Bug:   "an attempt whose owner Dispatch call failed ends its span as interrupted, not owner_failed, so a trace hides whose fault it was",
		Suite: RunnerSuite,
		Tests: "TestAFailedOwnerCallMarksTheAttemptSpan",
		Edits: []Edit{
			{
				File:    "runner/owner.go",
				Find:    "\ts.spans.ownerFailed(p.Identity, err)\n\ts.answered(p.Identity, rc, err)\n",
				Replace: "\ts.answered(p.Identity, rc, err)\n",
			},
		},
	},
	{
		Name:  "runner-attempt-span-unlinked-from-pass",
		Bug:   "the pass span does not link to the attempts it planned, so a pass's attempts cannot be found from it",
		Suite: RunnerSuite,
		Tests: "TestADispatchedAttemptIsOneTraceOfItsSteps|TestABatchDispatchGivesEachAttemptItsTrace",
		Edits: []Edit{
			{
				File:    "runner/attemptspan.go",
				Find:    "\tpass.AddLink(trace.Link{SpanContext: span.SpanContext()})\n",
				Replace: "",
			},
		},
	},
	{
		Name: "core-signal-cancelling-again",
		Bug:  "signalling cancellation of an already cancelling attempt is refused instead of a no-op",
		Edits: []Edit{
			{
				File: "workflow/internal/state/attempts.go",
				Find: `	case backend.AttemptCancelling:
		return ErrNoop
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return Errorf(wftype.ErrIneligible, "attempt %s is %s", att.Identity, att.Status)`,
				Replace: `	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return Errorf(wftype.ErrIneligible, "attempt %s is %s", att.Identity, att.Status)`,
			},
		},
	},
	{
		Name: "core-signal-any-status",
		Bug:  "a settled or repair_required attempt is moved back to cancelling by a cancellation signal",
		Edits: []Edit{
			{
				File: "workflow/internal/state/attempts.go",
				Find: `	default:
		return Errorf(wftype.ErrIneligible, "attempt %s is %s", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)`,
				Replace: `	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)`,
			},
		},
	},
	{
		Name: "core-resume-cancelled-run",
		Bug:  "a paused run whose cancellation is requested resumes",
		Edits: []Edit{
			{
				File: "workflow/internal/state/runs.go",
				Find: `		if run.CancelRequestedMS != 0 {
			return Errorf(wftype.ErrIneligible, "run %q has cancellation requested and cannot resume", run.ID)
		}`,
				Replace: ``,
			},
		},
	},
	{
		Name: "core-gate-not-idempotent",
		Bug:  "pausing a paused run (or resuming a running one) is refused instead of a no-op",
		Edits: []Edit{
			{
				File: "workflow/internal/state/runs.go",
				Find: `	case to:
		return ErrNoop
	case from:`,
				Replace: `	case from:`,
			},
		},
	},
	{
		Name: "core-gate-any-status",
		Bug:  "a run in any status (completed, failed, cancelled) can be paused or resumed",
		Edits: []Edit{
			{
				File: "workflow/internal/state/runs.go",
				Find: `	default:
		return Errorf(wftype.ErrIneligible, "run %q is %s", run.ID, run.Status)
	}
	run.Status = to`,
				Replace: `	}
	run.Status = to`,
			},
		},
	},
	{
		Name: "core-complete-cancelling-run",
		Bug:  "a run whose cancellation is requested completes instead of being cancelled",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/runs.go",
				Find:    `&& run.CancelRequestedMS == 0 && run.ActiveCount == 0`,
				Replace: `&& run.ActiveCount == 0`,
			},
		},
	},
	{
		Name: "core-cancel-with-active-attempt",
		Bug:  "a cancelling run is finalised as cancelled while one of its attempts is still active",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/runs.go",
				Find:    `	if run.CancelRequestedMS == 0 || RunTerminal(run.Status) || run.ActiveCount > 0 {`,
				Replace: `	if run.CancelRequestedMS == 0 || RunTerminal(run.Status) {`,
			},
		},
	},
	{
		Name: "core-retry-cancelling-run",
		Bug:  "a failed node of a run whose cancellation is requested is retried",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/runs.go",
				Find:    `if (run.Status != backend.RunFailed && run.Status != backend.RunRunning) || run.CancelRequestedMS != 0 {`,
				Replace: `if run.Status != backend.RunFailed && run.Status != backend.RunRunning {`,
			},
		},
	},
	{
		Name: "core-start-in-paused-run",
		Bug:  "an attempt starts in a paused run",
		Edits: []Edit{
			{
				File:    "workflow/internal/state/attempts.go",
				Find:    `if act.Status != backend.ActivationPending || run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {`,
				Replace: `if act.Status != backend.ActivationPending || run.Status == backend.RunCompleted || run.CancelRequestedMS != 0 {`,
			},
		},
	},
	{
		Name: "fanin-successor-not-atomic",
		Bug:  "a Succeeded observation whose fan-out cannot be added is applied without it, leaving its members behind",
		Edits: []Edit{
			{
				File:    "workflow/observe.go",
				Find:    `				if _, err := addFanOut(ctx, tx, w, &run, fo, at); err != nil {`,
				Replace: `				if _, err := addFanOut(ctx, tx, w, &run, fo, at); err != nil && false {`,
			},
		},
	},
	{
		Name: "fanin-controller-dispatched",
		Bug:  "a fan-in controller stays pending and is dispatched to an owner",
		Edits: []Edit{
			{
				File: "workflow/internal/state/fanout.go",
				Find: `	ctl.Status = backend.ActivationWaiting
	ctl.Admissible = false
`,
				Replace: "",
			},
		},
	},
	{
		Name: "fanin-for-every-group",
		Bug:  "a group created without FanIn gets a store-settled controller",
		Edits: []Edit{
			{
				File:    "workflow/fanout.go",
				Find:    `	if group.FanIn {`,
				Replace: `	if true {`,
			},
		},
	},
	{
		Name: "fanin-settles-before-last-member",
		Bug:  "a wait-all fan-in settles its controller before its last member settles",
		Edits: []Edit{
			{
				File:    "workflow/fanin.go",
				Find:    `if !g.FanIn || (failing == nil && g.Settled < g.Size) {`,
				Replace: `if !g.FanIn || (failing == nil && g.Settled < g.Size-1) {`,
			},
		},
	},
	{
		Name: "fanin-wait-all-ignores-failure",
		Bug:  "a wait-all fan-in whose member failed does not fail its controller",
		Edits: []Edit{
			{
				File:    "workflow/fanin.go",
				Find:    `		case p.Failed > 0:`,
				Replace: `		case p.Failed > 0 && false:`,
			},
		},
	},
	{
		Name: "fanin-fail-fast-waits",
		Bug:  "a fail-fast fan-in waits for every member instead of failing its controller with the first terminal failure",
		Edits: []Edit{
			{
				File:    "workflow/fanout.go",
				Find:    `	return decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, run, &g, &idx)`,
				Replace: `	return decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, run, &g, nil)`,
			},
		},
	},
	{
		Name: "fanin-ignores-pending-retry",
		Bug:  "a fan-in settles its controller while a failed member's automatic retry is pending",
		Edits: []Edit{
			{
				File:    "workflow/fanin.go",
				Find:    `			if len(sf.Schedules) > 0 {`,
				Replace: `			if len(sf.Schedules) > 0 && false {`,
			},
		},
	},
	{
		Name: "fanin-page-skips-first",
		Bug:  "a page of a group's members starts after its first index",
		Edits: []Edit{
			{
				File:    "workflow/fanin.go",
				Find:    `for i := from; i < g.Size && len(keys) < limit; i++ {`,
				Replace: `for i := from + 1; i < g.Size && len(keys) < limit; i++ {`,
			},
		},
	},
	{
		Name: "fanin-member-requeued-after-settlement",
		Bug:  "a member of a fan-in group whose controller settled is retried",
		Edits: []Edit{
			{
				File:    "workflow/fanout.go",
				Find:    `		if ctl, ok := f.Activations[g.Controller]; !ok || ctl.Status != backend.ActivationWaiting {`,
				Replace: `		if ctl, ok := f.Activations[g.Controller]; !ok && ctl.Status != backend.ActivationWaiting {`,
			},
		},
	},
	{
		Name: "fanin-retirement-leaves-controller-waiting",
		Bug:  "settling a fan-in group's retirement never settles its controller, so the run never completes",
		Edits: []Edit{
			{
				File: "workflow/fanout.go",
				Find: `		state.Replace(w, g)
		if err := decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, &run, &g, nil); err != nil {
			return err
		}
`,
				Replace: `		state.Replace(w, g)
`,
			},
		},
	},
	{
		Name: "fanin-controller-releases-no-join",
		Bug:  "a fan-in controller settled by the store neither releases nor cancels the joins waiting for it",
		Edits: []Edit{
			{
				File: "workflow/internal/state/fanout.go",
				Find: `	if len(ctl.Joins) > 0 {
		w.WaitForSettled(*ctl, as == backend.ActivationCompleted, at)
	}
`,
				Replace: "",
			},
		},
	},
	{
		Name: "claims-ignored",
		Bug:  "a dispatch pass plans and prepares candidates another Store holds the claim of",
		Edits: []Edit{
			{
				File: "workflow/sharedclaims.go",
				Find: `		if !got[j] {
			lost[i] = true`,
				Replace: `		if false && !got[j] {
			lost[i] = true`,
			},
		},
	},
	{
		Name:  "postgres-claim-steals",
		Bug:   "the PostgreSQL adapter's Claim takes a key another holder holds unexpired",
		Suite: "./postgres/",
		Tests: "TestConformance/contract/claims_",
		Edits: []Edit{
			{
				File:    "postgres/claims.go",
				Find:    "WHERE c.holder = excluded.holder OR c.expires_at <= clock_timestamp()\n",
				Replace: "WHERE true\n",
			},
		},
	},
	{
		Name: "receipt-claims-ignored",
		Bug:  "a receipt-backed pass asks the owner about attempts another Store holds the claim of",
		Edits: []Edit{
			{
				File: "workflow/sharedclaims.go",
				Find: `		if !got[j] {
			mine[i] = false`,
				Replace: `		if false && !got[j] {
			mine[i] = false`,
			},
		},
	},
	{
		Name:  "etcd-turn-ignored",
		Bug:   "an etcd Update commits while another Update holds the turn, so a large transaction racing small ones loses every race until ErrBusy",
		Suite: "./etcd/",
		Tests: "TestTurn|TestTreeCancellationUnderSustainedDispatch",
		Edits: []Edit{
			{
				File:    "etcd/backend.go",
				Find:    `		case t.turn.held && !b.turnHeldTooLong(t.turn.head):`,
				Replace: `		case t.turn.held && false:`,
			},
		},
	},
	{
		Name:  "postgres-attempts-filled",
		Bug:   "the PostgreSQL schema fills attempt pages to the brim, so an attempt's handoff moves its row to another page and writes an entry in every index",
		Suite: "./postgres/",
		Tests: "TestVersionSixSchemaMigratesToFillFactors",
		Edits: []Edit{
			{
				File:    "postgres/migrations.go",
				Find:    "ALTER TABLE {{s}}.attempts SET (fillfactor = 40);",
				Replace: "ALTER TABLE {{s}}.attempts SET (fillfactor = 100);",
			},
		},
	},
	{
		Name:  "postgres-status-gaps-skipped",
		Bug:   "an unfiltered PostgreSQL attempt scan walks only the statuses the workflow writes, losing attempts another caller stored with any other status",
		Suite: "./postgres/",
		Tests: "TestUnfilteredAttemptScans",
		Edits: []Edit{
			{
				File:    "postgres/queries.go",
				Find:    `branches = append(branches, "("+branch(gap, false)+")", "("+branch("status_group = "+lit(g), true)+")")`,
				Replace: `branches = append(branches, "("+branch("status_group = "+lit(g), true)+")"); _ = gap`,
			},
		},
	},
	{
		Name: "cursor-listing-unchecked",
		Bug:  "a listing accepts a cursor another listing produced and resumes at a position it never handed out",
		Edits: []Edit{
			{
				File:    "workflow/page.go",
				Find:    `	if !ok || string(head) != kind {`,
				Replace: `	if _ = head; !ok {`,
			},
		},
	},
	{
		Name: "events-next-on-full-page",
		Bug:  "a full page of events hands out a cursor although no event follows, so a caller pays an empty round trip",
		Edits: []Edit{
			{
				File: "workflow/inspect.go",
				Find: `	if len(out) > limit {
		out = out[:limit]
		page.Next = EventCursor(out[limit-1].Seq)
	}`,
				Replace: `	if len(out) > limit {
		out = out[:limit]
	}
	if len(out) == limit {
		page.Next = EventCursor(out[limit-1].Seq)
	}`,
			},
		},
	},
	{
		Name: "retries-next-without-peek",
		Bug:  "a page of the retry listing that ends exactly at the last run still hands out a cursor",
		Edits: []Edit{
			{
				File: "workflow/retryscan.go",
				Find: `	if !peek {
		return encodeCursor(kind, pos), nil
	}`,
				Replace: `	if !peek || true {
		return encodeCursor(kind, pos), nil
	}`,
			},
		},
	},
	{
		Name:  "etcd-claim-steals",
		Bug:   "the etcd adapter's Claim takes a key another holder holds unexpired",
		Suite: "./etcd/",
		Tests: "TestConformance/contract/claims_",
		Edits: []Edit{
			{
				File:    "etcd/claims.go",
				Find:    `[]clientv3.Cmp{clientv3.Compare(clientv3.Value(ek), "<", nowS)},`,
				Replace: `[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ek), ">", len(nowS)*0)},`,
			},
		},
	},
	{
		Name:  "sqlite-swap-claims-unchanged-row",
		Bug:   "the SQLite adapter's per-row compare-and-set reports true for an attempt it found changed and left as it was",
		Suite: "./sqlite/",
		Tests: "TestConformance/contract/swap_",
		Edits: []Edit{
			{
				File: "sqlite/write.go",
				Find: `		if errors.Is(err, backend.ErrChanged) {
			continue
		}`,
				Replace: `		if errors.Is(err, backend.ErrChanged) {
			out[i] = true
			continue
		}`,
			},
		},
	},
	{
		Name: "batch-handoff-counts-unflipped-rows",
		Bug:  "a batch's handoff counts an attempt its per-row compare-and-set did not change as handed off and calls the owner for it",
		Edits: []Edit{
			{
				File: "workflow/dispatch_batch.go",
				Find: `			if !ok {
				lost = append(lost, swaps[i].Old.Key)
			}`,
				Replace: `			_, _ = i, ok`,
			},
		},
	},
	{
		Name:  "postgres-turn-never-taken",
		Bug:   "the PostgreSQL adapter never takes the turn: an Update that keeps losing re-runs optimistically until its busy timeout, so a tree cancellation under sustained dispatch fails with ErrBusy",
		Suite: "./postgres/",
		Tests: "TestConformance/store.*/tree_cancellation_commits_under_sustained_racing_dispatch",
		Edits: []Edit{
			{
				File:    "postgres/turn.go",
				Find:    `	return run > turnAfter || (busyTimeout > 0 && elapsed >= busyTimeout/4)`,
				Replace: `	return false && (run > turnAfter || (busyTimeout > 0 && elapsed >= busyTimeout/4))`,
			},
		},
	},
	{
		Name:  "etcd-gate-closes-to-all",
		Bug:   "the etcd adapter's failed commit closes its commit gate to every Update of the Backend, so a conflict in one run holds back Updates of every other run",
		Suite: "./etcd/",
		Tests: "TestGate",
		Edits: []Edit{
			{
				File:    "etcd/backend.go",
				Find:    `				hold.want |= b.gate.conflicted(t.w.reads)`,
				Replace: `				hold.want |= b.gate.conflicted(nil)`,
			},
		},
	},
	{
		Name:  "etcd-gate-one-queue",
		Bug:   "the etcd adapter's commit gate puts every group of hot keys in one queue, so an Update that conflicted on one run waits behind those running again after a conflict on another",
		Suite: "./etcd/",
		Tests: "TestGate",
		Edits: []Edit{
			{
				File:    "etcd/gate.go",
				Find:    `	return uint8(h.Sum32() % gateQueues)`,
				Replace: `	return uint8(h.Sum32() % 1)`,
			},
		},
	},
	{
		Name:  "kvlayout-entry-overwritten",
		Bug:   "the key-value layout works out a record's new index entry over its old one in the shared scratch buffer, so a Replace that moves an entry (an attempt's status) sees them equal and leaves the old entry in place",
		Suite: "./internal/kvlayout/",
		Tests: "TestApplyMaintainsIndexEntries",
		Edits: []Edit{
			{
				File: "internal/kvlayout/apply.go",
				Find: `				del = e
				buf = e[len(e):]`,
				Replace: `				del = e`,
			},
		},
	},
	{
		Name:  "postgres-receipt-indexed",
		Bug:   "a PostgreSQL attempt index holds the status itself, so an attempt's receipt writes an entry in every index of attempts and SERIALIZABLE dispatchers of neighbouring runs fail each other's commits",
		Suite: "./postgres/",
		Tests: "TestReceiptsAreHeapOnly",
		Edits: []Edit{
			{
				File:    "postgres/migrations.go",
				Find:    "CREATE INDEX attempts_run_group_order ON {{s}}.attempts (run_id, status_group, prepared_ms, identity)",
				Replace: "CREATE INDEX attempts_run_group_order ON {{s}}.attempts (run_id, status, prepared_ms, identity)",
			},
		},
	},
	{
		Name:  "postgres-run-index-whole",
		Bug:   "the PostgreSQL run-scoped status index is not partial, so on tables never analyzed a read of one attempt by key may walk the run's whole stretch of it and predicate-lock every page of it",
		Suite: "./postgres/",
		Tests: "TestAttemptKeyStatementsUseThePrimaryKeyOnEmptyTables",
		Edits: []Edit{
			{
				File:    "postgres/migrations.go",
				Find:    "\tWHERE status_group IS NOT NULL;",
				Replace: ";",
			},
		},
	},
	{
		Name:  "postgres-status-group-kept-whole",
		Bug:   "a status-filtered PostgreSQL attempt scan returns every attempt of the status's group, so a scan for prepared attempts returns admitted ones too",
		Suite: "./postgres/",
		Tests: "TestUnfilteredAttemptScans|TestReceiptsAreHeapOnly",
		Edits: []Edit{
			{
				File:    "postgres/queries.go",
				Find:    `return branch("status_group = "+groupP+" AND status = "+statusP, true)`,
				Replace: `return branch("status_group = "+groupP+" AND (status = "+statusP+" OR true)", true)`,
			},
		},
	},
	{
		Name:  "etcd-gate-wait-counted",
		Bug:   "the etcd adapter counts an Update's wait at its Backend's commit gate toward its busy timeout and the turn's time rule, so under load Updates that merely waited take the turn and the whole store admits one at a time (or fail with ErrBusy)",
		Suite: "./etcd/",
		Tests: "TestGateWaitCountsNeitherTowardBusyTimeoutNorTurn",
		Edits: []Edit{
			{
				File:    "etcd/backend.go",
				Find:    `			start = start.Add(time.Since(entered))`,
				Replace: `			_ = entered`,
			},
		},
	},
	{
		Name:  "etcd-turn-wait-counted",
		Bug:   "the etcd adapter counts an Update's waits for other Updates' turns to pass toward its busy timeout and the turn's time rule, so under load Updates waiting through turns that each pass quickly join the queue and the whole store admits one at a time",
		Suite: "./etcd/",
		Tests: "TestWaitsForTurnsThatPassNeitherJoinTheQueueNorUseUpTheBusyTimeout",
		Edits: []Edit{
			{
				File:    "etcd/backend.go",
				Find:    `				start = start.Add(time.Since(waiting))`,
				Replace: `				_ = waiting`,
			},
		},
	},
	{
		Name:  "sqlite-carried-image-loses-key",
		Bug:   "the SQLite adapter's carried row image forgets the row key it is stored under, so a row the next Update only reads or rewrites is not carried on to the Update after it",
		Suite: "./sqlite/",
		Tests: "TestImages|TestCarried",
		Edits: []Edit{
			{
				File:    "sqlite/image.go",
				Find:    `args: im.args, owned: true, at: im.at}`,
				Replace: `args: im.args, owned: true}`,
			},
		},
	},
	{
		Name: "receipt-event-type-swapped",
		Bug:  "a receipt appends the other receipt event: attempt_cancellation_receipt_recorded for an admitted attempt, attempt_admitted for one being cancelled",
		Edits: []Edit{
			{
				File: "workflow/internal/state/attempts.go",
				Find: `	if typ == event.AttemptCancellationReceiptRecorded {
		emitDirect(w, run, event.AttemptCancellationReceiptRecordedPayload(p), at)`,
				Replace: `	if typ != event.AttemptCancellationReceiptRecorded {
		emitDirect(w, run, event.AttemptCancellationReceiptRecordedPayload(p), at)`,
			},
		},
	},
}
