package conformance

// storeTier lists the store-tier cases (through workflow.Store).
func storeTier() []Case { return nil }

// storeRoles lists the child-process roles the store tier uses.
func storeRoles() map[string]ChildRole { return nil }
