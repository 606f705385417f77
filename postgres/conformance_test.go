package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

// A locator is "<schema>|<dsn>": each case gets its own fresh schema.
func pgLocator(t testing.TB) string {
	dsn, schema := pgtest.Schema(t)
	return schema + "|" + dsn
}

func openLocator(ctx context.Context, loc string) (backend.Backend, error) {
	schema, dsn, ok := strings.Cut(loc, "|")
	if !ok {
		return nil, fmt.Errorf("bad locator %q", loc)
	}
	// Many-row statements from two records on: the suite's short slices
	// exercise them too (the default writes slices of up to SmallSlice
	// records one statement per record, the path a slice of one takes).
	return postgres.Open(ctx, withMaxConns(dsn, 3), postgres.WithSchema(schema), postgres.WithManyRowsFrom(2))
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "postgres",
		New:  pgLocator,
		Open: openLocator,
	})
}
