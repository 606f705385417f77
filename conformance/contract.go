package conformance

// contractTier lists the contract-tier cases (through backend.Backend
// directly), grouped by concern; see the package documentation's table.
func contractTier() []testCase {
	var all []testCase
	for _, group := range [][]testCase{
		roundTripCases(),
		loadCases(),
		expectCases(),
		writeCases(),
		orderCases(),
		deleteCases(),
		scanCases(),
		runScanCases(),
		transactionCases(),
		concurrencyCases(),
		insertRaceUnindexedCases(),
		errorCases(),
		groupCommitCases(),
		claimCases(),
		swapCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// contractRoles lists the child-process roles the contract tier uses.
func contractRoles() map[string]childRole {
	return map[string]childRole{
		roleIncrement:  incrementRole,
		roleInsertRace: insertRaceRole,
	}
}
