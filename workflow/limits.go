package workflow

// MaxPageLimit is the largest limit any list or scan accepts.
const MaxPageLimit = 1000

// validateLimit checks a list or scan limit: it must be in 1..=MaxPageLimit.
// field names the limit, e.g. "history limit", giving the error text
// "workflow: history limit must be in 1..=1000".
func validateLimit(field string, limit int) error {
	if limit < 1 || limit > MaxPageLimit {
		return invalid(field, "must be in 1..=%d", MaxPageLimit)
	}
	return nil
}
