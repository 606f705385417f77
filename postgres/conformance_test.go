package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/internal/pgtest"
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
	return postgres.Open(ctx, withMaxConns(dsn, 3), postgres.WithSchema(schema))
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "postgres",
		New:  pgLocator,
		Open: openLocator,
	})
}
