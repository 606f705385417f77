package postgres

import "strings"

// SchemaVersion is the schema version this build creates and accepts.
const SchemaVersion = 8

// storeMark is written to the version row; a meta table holding anything
// else marks a foreign store.
const storeMark = "wfstore"

// metaTable holds the single version row (id = 1). Migrations update its
// version by compare-and-set, so two migrators can never both apply a step
// even where advisory locks are stubbed out.
const metaTable = "wfstore_meta"

// migrations[i] moves the schema from version i to i+1. "{{s}}" is replaced
// by the quoted schema name. Every statement is plain DDL inside the
// migration transaction; nothing here ANALYZEs (the tables are empty, and
// statistics of empty tables are exactly what made cached plans go bad).
var migrations = []string{
	// 0 -> 1
	`
CREATE TABLE {{s}}.wfstore_meta (
	id         integer PRIMARY KEY CHECK (id = 1),
	store      text    NOT NULL,
	version    bigint  NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{s}}.runs (
	id                      text COLLATE "C" PRIMARY KEY,
	root_id                 text COLLATE "C" NOT NULL,
	parent_id               text COLLATE "C" NOT NULL,
	depth                   bigint  NOT NULL,
	status                  text COLLATE "C" NOT NULL,
	node_execution_cap      bigint  NOT NULL,
	concurrency_cap         bigint  NOT NULL,
	cycle_cap               bigint  NOT NULL,
	retry_cap               bigint  NOT NULL,
	deadline_ms             bigint  NOT NULL,
	cancel_requested_ms     bigint  NOT NULL,
	auth_target_artifact_id text COLLATE "C",
	auth_daemon_instance_id text COLLATE "C",
	auth_generation         bigint,
	auth_fencing_token      text COLLATE "C",
	metadata                bytea,
	created_ms              bigint  NOT NULL,
	updated_ms              bigint  NOT NULL,
	last_event_seq          bigint  NOT NULL,
	attempt_count           bigint  NOT NULL,
	active_count            bigint  NOT NULL,
	tree_attempt_count      bigint  NOT NULL,
	descendant_count        bigint  NOT NULL,
	exhaustion_recorded     boolean NOT NULL,
	CHECK ((auth_generation IS NULL) = (auth_target_artifact_id IS NULL)
	   AND (auth_generation IS NULL) = (auth_daemon_instance_id IS NULL)
	   AND (auth_generation IS NULL) = (auth_fencing_token IS NULL))
);

CREATE TABLE {{s}}.run_links (
	child_run_id         text COLLATE "C" PRIMARY KEY,
	root_run_id          text COLLATE "C" NOT NULL,
	parent_run_id        text COLLATE "C" NOT NULL,
	parent_node_id       text COLLATE "C" NOT NULL,
	parent_activation_id text COLLATE "C" NOT NULL,
	parent_attempt       bigint NOT NULL,
	target               bytea,
	depth                bigint NOT NULL,
	created_ms           bigint NOT NULL
);
CREATE INDEX run_links_root_order ON {{s}}.run_links (root_run_id, created_ms, child_run_id);

CREATE TABLE {{s}}.activations (
	run_id                     text COLLATE "C" NOT NULL,
	node_id                    text COLLATE "C" NOT NULL,
	activation_id              text COLLATE "C" NOT NULL,
	generation                 bigint  NOT NULL,
	status                     text COLLATE "C" NOT NULL,
	admissible                 boolean NOT NULL,
	input                      bytea,
	output                     bytea,
	claim_resources            text[] COLLATE "C",
	claim_modes                text[] COLLATE "C",
	effect                     text COLLATE "C" NOT NULL,
	reconciliation             text COLLATE "C" NOT NULL,
	retry_policy               bytea,
	predecessor_node_ids       text[] COLLATE "C",
	predecessor_activation_ids text[] COLLATE "C",
	has_successors             boolean NOT NULL,
	group_run_id               text COLLATE "C",
	group_node_id              text COLLATE "C",
	group_activation_id        text COLLATE "C",
	group_index                bigint,
	last_attempt               bigint NOT NULL,
	created_ms                 bigint NOT NULL,
	updated_ms                 bigint NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id),
	CHECK ((claim_resources IS NULL) = (claim_modes IS NULL)),
	CHECK ((predecessor_node_ids IS NULL) = (predecessor_activation_ids IS NULL)),
	CHECK ((group_index IS NULL) = (group_run_id IS NULL)
	   AND (group_index IS NULL) = (group_node_id IS NULL)
	   AND (group_index IS NULL) = (group_activation_id IS NULL))
);
-- The pending index holds admissible activations only, so discovery reads
-- only rows it may return.
CREATE INDEX activations_admissible ON {{s}}.activations (run_id, node_id, activation_id) WHERE admissible;

CREATE TABLE {{s}}.fan_out_groups (
	run_id          text COLLATE "C" NOT NULL,
	node_id         text COLLATE "C" NOT NULL,
	activation_id   text COLLATE "C" NOT NULL,
	size            bigint  NOT NULL,
	max_concurrency bigint  NOT NULL,
	promoted        bigint  NOT NULL,
	settled         bigint  NOT NULL,
	retiring        boolean NOT NULL,
	retired_ms      bigint  NOT NULL,
	created_ms      bigint  NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id)
);

CREATE TABLE {{s}}.attempts (
	run_id          text COLLATE "C" NOT NULL,
	node_id         text COLLATE "C" NOT NULL,
	activation_id   text COLLATE "C" NOT NULL,
	attempt         bigint NOT NULL,
	identity        text COLLATE "C" NOT NULL,
	status          text COLLATE "C" NOT NULL,
	side_effect     text COLLATE "C" NOT NULL,
	intent          bytea,
	intent_checksum text COLLATE "C" NOT NULL,
	receipt         bytea,
	handoff         text COLLATE "C" NOT NULL,
	detail          bytea,
	prepared_ms     bigint NOT NULL,
	admitted_ms     bigint NOT NULL,
	terminal_ms     bigint NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id, attempt),
	CONSTRAINT attempts_identity UNIQUE (identity)
);
CREATE INDEX attempts_order            ON {{s}}.attempts (prepared_ms, identity);
CREATE INDEX attempts_status_order     ON {{s}}.attempts (status, prepared_ms, identity);
CREATE INDEX attempts_run_order        ON {{s}}.attempts (run_id, prepared_ms, identity);
CREATE INDEX attempts_run_status_order ON {{s}}.attempts (run_id, status, prepared_ms, identity);

CREATE TABLE {{s}}.leases (
	run_id        text COLLATE "C" NOT NULL,
	node_id       text COLLATE "C" NOT NULL,
	activation_id text COLLATE "C" NOT NULL,
	attempt       bigint NOT NULL,
	resource      text COLLATE "C" NOT NULL,
	mode          text COLLATE "C" NOT NULL,
	acquired_ms   bigint NOT NULL,
	released_ms   bigint NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id, attempt, resource, mode)
);
CREATE INDEX leases_active ON {{s}}.leases (run_id, node_id, activation_id, attempt, resource, mode) WHERE released_ms = 0;
CREATE INDEX leases_active_resource ON {{s}}.leases (run_id, resource, node_id, activation_id, attempt, mode) WHERE released_ms = 0;

CREATE TABLE {{s}}.retry_schedules (
	run_id         text COLLATE "C" NOT NULL,
	node_id        text COLLATE "C" NOT NULL,
	activation_id  text COLLATE "C" NOT NULL,
	failed_attempt bigint NOT NULL,
	next_attempt   bigint NOT NULL,
	failure_kind   text COLLATE "C" NOT NULL,
	backoff_ms     bigint NOT NULL,
	due_ms         bigint NOT NULL,
	scheduled_ms   bigint NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id)
);
CREATE INDEX retry_schedules_due ON {{s}}.retry_schedules (run_id, due_ms, node_id, activation_id);

CREATE TABLE {{s}}.events (
	run_id     text COLLATE "C" NOT NULL,
	seq        bigint NOT NULL,
	type       text COLLATE "C" NOT NULL,
	payload    bytea,
	created_ms bigint NOT NULL,
	PRIMARY KEY (run_id, seq)
);
`,
	// 1 -> 2: a fan-out group's settlement policy (false = wait-all, the
	// default, and what every group created before this version is).
	`
ALTER TABLE {{s}}.fan_out_groups ADD COLUMN fail_fast boolean NOT NULL DEFAULT false;
`,
	// 2 -> 3: runs by status, in id order, so that a status-filtered run
	// listing reads only the runs it returns.
	`
CREATE INDEX runs_by_status ON {{s}}.runs (status, id);
`,
	// 3 -> 4: an attempt's handoff holder token ('' while the handoff is
	// pending or unknown, and for every handoff recorded before this
	// version) and an activation's attempt timeout (0 = none set: the
	// engine's default applies, as for every activation created before).
	`
ALTER TABLE {{s}}.attempts ADD COLUMN handoff_token text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {{s}}.activations ADD COLUMN attempt_timeout_ms bigint NOT NULL DEFAULT 0;
`,
	// 4 -> 5: joins (the activations a join waits for, NULL when it is
	// none, as for every activation created before this version; how many
	// of them are not yet completed; the joins waiting for this
	// activation, NULL when none) and a fan-out group's settlement by the
	// store (false = owner settlement, as for every group created before).
	`
ALTER TABLE {{s}}.activations
	ADD COLUMN wait_for_node_ids text[] COLLATE "C",
	ADD COLUMN wait_for_activation_ids text[] COLLATE "C",
	ADD COLUMN open_waits bigint NOT NULL DEFAULT 0,
	ADD COLUMN join_node_ids text[] COLLATE "C",
	ADD COLUMN join_activation_ids text[] COLLATE "C",
	ADD CHECK ((wait_for_node_ids IS NULL) = (wait_for_activation_ids IS NULL)),
	ADD CHECK ((join_node_ids IS NULL) = (join_activation_ids IS NULL));
ALTER TABLE {{s}}.fan_out_groups ADD COLUMN fan_in boolean NOT NULL DEFAULT false;
`,
	claimsMigration,
	lighterAdmissionsMigration,
	heapOnlyReceiptsMigration,
}

// claimsMigration adds the advisory claims table (claims.go). It is
// UNLOGGED: no transaction reads it, and a crash may empty it.
const claimsMigration = `
CREATE UNLOGGED TABLE {{s}}.claims (
	key        text COLLATE "C" PRIMARY KEY,
	holder     text COLLATE "C" NOT NULL,
	expires_at timestamptz NOT NULL
);
`

// lighterAdmissionsMigration (6 -> 7) makes an admission write less.
//
// It leaves free space in every page of the two tables an admission
// updates in place, so that an update finds room for the new row version
// on the old one's page. There an update that changes no indexed column is
// HOT (heap-only: no index entry written; an attempt's handoff, which sets
// only handoff and handoff_token), and one that does (an attempt's status,
// an activation's admissible flag) still writes its new version beside the
// old, without first logging a lock of the old row and logging the full
// new row, as an update moving to another page must. An attempt takes two
// updates in its first second (handoff, receipt), an activation one at its
// admission; pages written before this version keep the fill they had.
//
// It drops the two attempt indexes ordered by time alone (attempts_order,
// attempts_run_order), which every attempt insert and status change wrote
// an entry in: an unfiltered attempt scan merges the status indexes' walks
// of every status instead (attemptScan).
const lighterAdmissionsMigration = `
ALTER TABLE {{s}}.attempts SET (fillfactor = 40);
ALTER TABLE {{s}}.activations SET (fillfactor = 50);
DROP INDEX {{s}}.attempts_order;
DROP INDEX {{s}}.attempts_run_order;
`

// heapOnlyReceiptsMigration (7 -> 8) makes an attempt's receipt (status
// prepared -> admitted, with its receipt and admission time) a heap-only
// update, as its handoff already is.
//
// The status indexes held status itself, so the receipt, changing it, was
// never heap-only: its new row version took a new entry in every index of
// attempts, the primary key's included. Under SERIALIZABLE every Update
// reading an attempt by key holds a predicate lock on that key's whole
// primary-key leaf page, and an entry written into a page another running
// transaction holds such a lock on is a read-write conflict between them:
// dispatchers admitting distinct runs whose attempts share leaf pages
// failed each other's commits (about 0.3 re-runs per admission with 8
// dispatchers of wfstore bench, 0.12 without these entries).
//
// The status indexes now hold status_group instead: the status, except
// that an admitted attempt is grouped with the prepared ones, so that the
// receipt changes no indexed column. A status-filtered scan walks its
// status's group in order and keeps its status's attempts; for prepared
// or admitted it passes over the attempts of the other, which are in
// flight (neither is terminal), never history. status_group is generated
// by the server from status: the adapter never writes it, and no stored
// row can disagree with it. Adding it rewrites the table once.
//
// The run-scoped index is partial, on a condition every row meets
// (status_group is NOT NULL) but which only a statement constraining
// status_group implies, so that the planner never reads one attempt by key
// through it: the primary key is then the only index a statement that
// constrains no status_group can use. The run-scoped status index it
// replaces also led with run_id, and on tables never analyzed (a new
// store, a bench) the planner costed it and the primary key alike and
// read one attempt, in the generic plan it then caches, through the run's
// whole stretch of it, holding a predicate lock on every page of that
// stretch under SERIALIZABLE.
const heapOnlyReceiptsMigration = `
ALTER TABLE {{s}}.attempts ADD COLUMN status_group text COLLATE "C" NOT NULL
	GENERATED ALWAYS AS (CASE WHEN status = 'admitted' THEN 'prepared' ELSE status END) STORED;
DROP INDEX {{s}}.attempts_status_order;
DROP INDEX {{s}}.attempts_run_status_order;
CREATE INDEX attempts_group_order     ON {{s}}.attempts (status_group, prepared_ms, identity);
CREATE INDEX attempts_run_group_order ON {{s}}.attempts (run_id, status_group, prepared_ms, identity)
	WHERE status_group IS NOT NULL;
`

// ourTables lists every table of the current schema, for tests and checks.
var ourTables = []string{
	metaTable, tRuns.name, tLinks.name, tActivations.name, tGroups.name,
	tAttempts.name, tLeases.name, tSchedules.name, tEvents.name, claimsTable,
}

func migrationSQL(i int, quotedSchema string) string {
	return strings.ReplaceAll(migrations[i], "{{s}}", quotedSchema)
}
