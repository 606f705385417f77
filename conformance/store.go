package conformance

// storeTier lists the store-tier cases: every operation and invariant of
// the Store, through workflow.Store over the adapter. The batch tier runs
// them with Dispatch in batch mode, without the model cases (which check
// both modes themselves).
func storeTier(batch bool) []testCase {
	var out []testCase
	for _, group := range [][]testCase{
		admissionCases(),
		multiProcessCases(),
		authorityCases(),
		receiptCases(),
		reconcileCases(),
		retryCases(),
		retryRuleCases(),
		fanoutCases(),
		fanoutSettlementCases(),
		faninCases(),
		modelCases(batch),
		verifyCases(),
		linearizabilityCases(),
		cancelCases(),
		limitsCases(),
		childCases(),
		inputCases(),
		fencingCases(),
		discoveryCases(),
		boundaryCases(),
		opsCases(),
		receiptPassCases(),
		cancelSignalCases(),
		treeCases(),
		treeCancelLoadCases(),
		pruneCases(),
		pruneResumeCases(),
		payloadCases(),
		stuckCases(),
		workCountCases(),
		batchParityCases(batch),
		exhaustedWorkCases(),
		completionCases(),
		failedRunCases(),
		retryVisibilityCases(),
		seedDepartureCases(),
		orphanCases(),
		siblingCases(),
		joinCases(),
		pipelineCases(),
		claimStoreCases(),
		pagingCases(),
	} {
		out = append(out, group...)
	}
	return out
}

// storeRoles lists the child-process roles the store tier uses.
func storeRoles() map[string]childRole {
	return map[string]childRole{roleDispatch: childDispatch}
}
