package model

import "slices"

// Inspection: the run summary, attempt history, intent and receipt.

// RunCounts is the bounded run summary's content the tier compares.
type RunCounts struct {
	Activations map[string]int
	Attempts    map[string]int
	Leases      int
	RunCap      int64
}

// Summary counts the run's activations and attempts by status and its
// held leases.
func (m *Model) Summary(runID string) (RunCounts, Err) {
	run, ok := m.Runs[runID]
	if !ok {
		return RunCounts{}, NotFound
	}
	out := RunCounts{Activations: map[string]int{}, Attempts: map[string]int{}, RunCap: run.Limits.NodeExecutionCap}
	for _, a := range m.actsOf(runID) {
		out.Activations[a.Status]++
	}
	for _, a := range m.attemptsOf(runID) {
		out.Attempts[a.Status]++
		if holdsLease(a.Status) && m.Activations[a.Key.ActivationKey].Def.Claim {
			out.Leases++
		}
	}
	return out, OK
}

// History returns the identities of the run's attempts in (prepared,
// identity) order, or its reverse.
func (m *Model) History(runID string, desc bool) []string {
	var out []string
	for _, a := range m.attemptsOf(runID) {
		out = append(out, a.Identity)
	}
	if desc {
		slices.Reverse(out)
	}
	return out
}

// Intent is what inspection reports of one attempt: its side effect and
// the receipt kind committed ("" = none).
func (m *Model) Intent(identity string) (effect, receipt string, e Err) {
	k, ok := m.byID[identity]
	if !ok {
		return "", "", NotFound
	}
	a := m.Attempts[k]
	return a.Effect, a.Receipt, OK
}
