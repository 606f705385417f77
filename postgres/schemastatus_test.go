package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

func TestSchemaStatusAndMigrateOfAMissingSchema(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	pool := newPool(t, dsn, 2)
	st, err := postgres.ReadSchemaStatus(ctxT(t), pool, schema)
	require.NoError(t, err)
	assert.Equal(t, postgres.SchemaStatus{Found: 0, Supported: postgres.SchemaVersion}, st)
	assert.Empty(t, catalog(t, schema), "reading the status creates nothing")

	before, err := postgres.Migrate(ctxT(t), pool, schema)
	require.NoError(t, err)
	assert.Equal(t, postgres.SchemaStatus{Found: 0, Supported: postgres.SchemaVersion}, before)
	st, err = postgres.ReadSchemaStatus(ctxT(t), pool, schema)
	require.NoError(t, err)
	assert.True(t, st.Current(), "%+v", st)
	require.NoError(t, pool.Ping(ctxT(t)), "the caller's pool stays open")

	cat := catalog(t, schema)
	before, err = postgres.Migrate(ctxT(t), pool, schema)
	require.NoError(t, err)
	assert.True(t, before.Current())
	assert.Equal(t, cat, catalog(t, schema), "migrating a current store writes nothing")
}

func TestSchemaStatusReportsANewerStoreAndMigrateRefusesIt(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	pool := newPool(t, dsn, 2)
	_, err := postgres.Migrate(ctxT(t), pool, schema)
	require.NoError(t, err)
	exec1(t, "UPDATE "+pgx.Identifier{schema, "wfstore_meta"}.Sanitize()+" SET version = 9")
	cat, meta := catalog(t, schema), metaRow(t, schema)

	st, err := postgres.ReadSchemaStatus(ctxT(t), pool, schema)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	assert.Equal(t, postgres.SchemaStatus{Found: 9, Supported: postgres.SchemaVersion}, st)
	_, err = postgres.Migrate(ctxT(t), pool, schema)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	assert.Equal(t, cat, catalog(t, schema))
	assert.Equal(t, meta, metaRow(t, schema), "refused without writing")
}
