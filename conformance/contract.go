package conformance

// contractTier lists the contract-tier cases (through backend.Backend
// directly), grouped by concern; see the package documentation's table.
func contractTier() []Case {
	var all []Case
	for _, group := range [][]Case{
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
		errorCases(),
		groupCommitCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// contractRoles lists the child-process roles the contract tier uses.
func contractRoles() map[string]ChildRole {
	return map[string]ChildRole{
		roleIncrement:  incrementRole,
		roleInsertRace: insertRaceRole,
	}
}
