package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every row of the backends table says what each command does with it:
// opens, checks, imports, benchmarks; migrates and backs up or says why
// not. The usage lists come from the table.
func TestBackendsTableIsComplete(t *testing.T) {
	for i := range backends {
		s := &backends[i]
		assert.NotNil(t, s.open, s.name)
		assert.NotNil(t, s.checkExisting, s.name)
		assert.NotNil(t, s.importInto, s.name)
		assert.NotNil(t, s.benchTarget, s.name)
		assert.NotNil(t, s.harness, "%s: wfstore conform certifies every backend", s.name)
		assert.True(t, (s.migrate == nil) != (s.noMigrate == ""), "%s: a migration or the reason there is none", s.name)
		assert.True(t, (s.backup == nil) != (s.noBackup == ""), "%s: a backup or the reason there is none", s.name)
		assert.Equal(t, s.loc == byFile, s.openCopy != nil, "%s: file backends open their backups read-only", s.name)
		got, ok := lookupBackend(s.name)
		assert.True(t, ok)
		assert.Same(t, s, got)
	}
	assert.Equal(t, "sqlite, postgres, bolt or etcd", backendNames(nil))
	assert.Equal(t, "sqlite, postgres, bolt or etcd", backendNames(conformable))
	assert.Equal(t, "sqlite or bolt", namesWith(byFile))
	_, ok := lookupBackend("sqlit")
	assert.False(t, ok)
}

// A command that writes in batches (prune) fits an etcd transaction to
// --max-txn-ops; the other backends keep the library's default.
func TestWriteBatchFollowsMaxTxnOps(t *testing.T) {
	f := &storeFlags{backend: "etcd", maxTxnOps: 4096}
	assert.Equal(t, 256, f.spec().writeBatch(f))
	f.maxTxnOps = 8
	assert.Equal(t, 1, f.spec().writeBatch(f))
	f = &storeFlags{backend: "sqlite"}
	assert.Equal(t, 0, f.spec().writeBatch(f))
}
