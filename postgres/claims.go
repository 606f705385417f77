package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
)

var _ backend.Claimer = (*Backend)(nil)

// claimsTable holds the advisory claims (backend.Claimer): one row per
// claimed key, with its holder and its expiry by the server's clock. It is
// UNLOGGED: claims are hints that no transaction reads, so a crash that
// empties the table costs speed only, and claiming writes no WAL and
// waits for no flush.
const claimsTable = "claims"

// claimPurgeEvery: one Release in this many also deletes every expired
// claim (of holders that crashed or hung), so that the table holds about
// the claims in force.
const claimPurgeEvery = 64

const (
	maxClaimKeyBytes    = 512
	maxClaimHolderBytes = 128
)

// Claim implements backend.Claimer in one statement, outside any
// transaction of Update: an insert of each key that takes over a row
// only when its claim expired or is already the holder's. Keys are
// inserted in order, so that two concurrent Claims wait for each other
// at most once and never deadlock; a Claim waits only for another Claim
// or Release of the same key.
func (b *Backend) Claim(ctx context.Context, holder string, keys []string, ttl time.Duration) ([]bool, error) {
	if err := checkClaim(holder, keys); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("postgres: claim ttl %v is not positive", ttl)
	}
	out := make([]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	cctx, leave, err := b.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	rows, err := b.pool.Query(cctx, b.q.claim, sorted, holder, ttl.Microseconds())
	if err != nil {
		return nil, claimErr(cctx, "claim", err)
	}
	held := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, claimErr(cctx, "claim", err)
		}
		held[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, claimErr(cctx, "claim", err)
	}
	for i, k := range keys {
		out[i] = held[k]
	}
	return out, nil
}

// Release implements backend.Claimer.
func (b *Backend) Release(ctx context.Context, holder string, keys []string) error {
	if err := checkClaim(holder, keys); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	cctx, leave, err := b.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if _, err := b.pool.Exec(cctx, b.q.release, holder, keys); err != nil {
		return claimErr(cctx, "release", err)
	}
	if b.releases.Add(1)%claimPurgeEvery == 0 {
		if _, err := b.pool.Exec(cctx, b.q.purgeClaims); err != nil {
			return claimErr(cctx, "purge claims", err)
		}
	}
	return nil
}

func checkClaim(holder string, keys []string) error {
	if holder == "" || len(holder) > maxClaimHolderBytes || strings.IndexByte(holder, 0) >= 0 {
		return errors.New("postgres: claim holder must be 1 to 128 bytes without NUL")
	}
	for _, k := range keys {
		if k == "" || len(k) > maxClaimKeyBytes || strings.IndexByte(k, 0) >= 0 {
			return errors.New("postgres: claim key must be 1 to 512 bytes without NUL")
		}
	}
	return nil
}

func claimErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctxErr(ctx, op, nil)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// claimQueries returns the Claim, Release and purge statements over the
// claims table of quotedSchema.
func claimQueries(quotedSchema string) (claim, release, purge string) {
	t := quotedSchema + "." + claimsTable
	claim = `INSERT INTO ` + t + ` AS c (key, holder, expires_at)
SELECT k, $2, clock_timestamp() + $3 * interval '1 microsecond' FROM unnest($1::text[]) AS k
ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE c.holder = excluded.holder OR c.expires_at <= clock_timestamp()
RETURNING key`
	release = `DELETE FROM ` + t + ` WHERE holder = $1 AND key = ANY($2::text[])`
	purge = `DELETE FROM ` + t + ` WHERE expires_at <= clock_timestamp()`
	return claim, release, purge
}
