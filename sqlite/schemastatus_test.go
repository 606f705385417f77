package sqlite

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

func TestSchemaStatusAndMigrateOfAFreshFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	st, err := ReadSchemaStatus(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, SchemaStatus{Found: 0, Supported: SchemaVersion}, st)
	assert.False(t, st.Current())
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "reading the status creates nothing")

	before, err := Migrate(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	assert.Equal(t, SchemaStatus{Found: 0, Supported: SchemaVersion}, before)
	st, err = ReadSchemaStatus(ctx, path)
	require.NoError(t, err)
	assert.True(t, st.Current(), "%+v", st)
	// Migrating a current store changes nothing.
	hash := fileHash(t, path)
	before, err = Migrate(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	assert.True(t, before.Current())
	assert.Equal(t, hash, fileHash(t, path))
}

func TestSchemaStatusReportsNewerAndForeignStoresWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := storeOfVersion(t, 7)
	hash := fileHash(t, path)

	st, err := ReadSchemaStatus(ctx, path)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	assert.Equal(t, SchemaStatus{Found: 7, Supported: SchemaVersion}, st)
	_, err = Migrate(ctx, path)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	assert.Equal(t, hash, fileHash(t, path), "refused without writing")

	foreign := newPath(t)
	require.NoError(t, os.WriteFile(foreign, []byte("not a database, just bytes....................................................................................................."), 0o600))
	_, err = ReadSchemaStatus(ctx, foreign)
	require.ErrorIs(t, err, backend.ErrForeignStore)
	assert.Contains(t, err.Error(), foreign)
}
