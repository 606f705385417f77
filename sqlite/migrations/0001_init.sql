-- wfstore sqlite schema version 1.
--
-- Every text key uses the default BINARY collation (bytewise order). Times and
-- counters are INTEGER (int64); canonical JSON is TEXT (NULL = absent).
-- Claims and predecessors are BLOBs in a small length-prefixed encoding
-- (see codec.go). Tables are STRICT so a value of the wrong type is refused.

CREATE TABLE wfstore_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;

CREATE TABLE runs (
	id                      TEXT PRIMARY KEY,
	root_id                 TEXT NOT NULL,
	parent_id               TEXT NOT NULL,
	depth                   INTEGER NOT NULL,
	status                  TEXT NOT NULL,
	node_execution_cap      INTEGER NOT NULL,
	concurrency_cap         INTEGER NOT NULL,
	cycle_cap               INTEGER NOT NULL,
	retry_cap               INTEGER NOT NULL,
	deadline_ms             INTEGER NOT NULL,
	cancel_requested_ms     INTEGER NOT NULL,
	auth_target_artifact_id TEXT,
	auth_daemon_instance_id TEXT,
	auth_generation         INTEGER,
	auth_fencing_token      TEXT,
	metadata                TEXT,
	created_ms              INTEGER NOT NULL,
	updated_ms              INTEGER NOT NULL,
	last_event_seq          INTEGER NOT NULL,
	attempt_count           INTEGER NOT NULL,
	active_count            INTEGER NOT NULL,
	tree_attempt_count      INTEGER NOT NULL,
	descendant_count        INTEGER NOT NULL,
	exhaustion_recorded     INTEGER NOT NULL
) STRICT;

CREATE TABLE run_links (
	child_run_id         TEXT PRIMARY KEY,
	root_run_id          TEXT NOT NULL,
	parent_run_id        TEXT NOT NULL,
	parent_node_id       TEXT NOT NULL,
	parent_activation_id TEXT NOT NULL,
	parent_attempt       INTEGER NOT NULL,
	target               TEXT,
	depth                INTEGER NOT NULL,
	created_ms           INTEGER NOT NULL
) STRICT;

CREATE INDEX run_links_by_root ON run_links (root_run_id, created_ms, child_run_id);

CREATE TABLE activations (
	run_id              TEXT NOT NULL,
	node_id             TEXT NOT NULL,
	activation_id       TEXT NOT NULL,
	generation          INTEGER NOT NULL,
	status              TEXT NOT NULL,
	admissible          INTEGER NOT NULL,
	input               TEXT,
	output              TEXT,
	claims              BLOB,
	effect              TEXT NOT NULL,
	reconciliation      TEXT NOT NULL,
	retry_policy        TEXT,
	predecessors        BLOB,
	has_successors      INTEGER NOT NULL,
	group_run_id        TEXT,
	group_node_id       TEXT,
	group_activation_id TEXT,
	group_index         INTEGER,
	last_attempt        INTEGER NOT NULL,
	created_ms          INTEGER NOT NULL,
	updated_ms          INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id)
) STRICT;

-- Only admissible activations are indexed: discovery reads only rows it may return.
CREATE INDEX activations_admissible ON activations (run_id, node_id, activation_id) WHERE admissible = 1;

CREATE TABLE fan_out_groups (
	run_id          TEXT NOT NULL,
	node_id         TEXT NOT NULL,
	activation_id   TEXT NOT NULL,
	size            INTEGER NOT NULL,
	max_concurrency INTEGER NOT NULL,
	promoted        INTEGER NOT NULL,
	settled         INTEGER NOT NULL,
	retiring        INTEGER NOT NULL,
	retired_ms      INTEGER NOT NULL,
	created_ms      INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id)
) STRICT;

CREATE TABLE attempts (
	run_id          TEXT NOT NULL,
	node_id         TEXT NOT NULL,
	activation_id   TEXT NOT NULL,
	attempt         INTEGER NOT NULL,
	identity        TEXT NOT NULL,
	status          TEXT NOT NULL,
	side_effect     TEXT NOT NULL,
	intent          TEXT,
	intent_checksum TEXT NOT NULL,
	receipt         TEXT,
	handoff         TEXT NOT NULL,
	detail          TEXT,
	prepared_ms     INTEGER NOT NULL,
	admitted_ms     INTEGER NOT NULL,
	terminal_ms     INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id, attempt)
) STRICT;

CREATE UNIQUE INDEX attempts_identity ON attempts (identity);
CREATE INDEX attempts_by_prepared ON attempts (prepared_ms, identity);
CREATE INDEX attempts_by_status ON attempts (status, prepared_ms, identity);
CREATE INDEX attempts_by_run ON attempts (run_id, prepared_ms, identity);
CREATE INDEX attempts_by_run_status ON attempts (run_id, status, prepared_ms, identity);

CREATE TABLE leases (
	run_id        TEXT NOT NULL,
	node_id       TEXT NOT NULL,
	activation_id TEXT NOT NULL,
	attempt       INTEGER NOT NULL,
	resource      TEXT NOT NULL,
	mode          TEXT NOT NULL,
	acquired_ms   INTEGER NOT NULL,
	released_ms   INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id, attempt, resource, mode)
) STRICT;

-- Only unreleased leases are indexed for the active scans.
CREATE INDEX leases_active ON leases (run_id, node_id, activation_id, attempt, resource, mode) WHERE released_ms = 0;
CREATE INDEX leases_active_by_resource ON leases (run_id, resource, node_id, activation_id, attempt, mode) WHERE released_ms = 0;

CREATE TABLE retry_schedules (
	run_id         TEXT NOT NULL,
	node_id        TEXT NOT NULL,
	activation_id  TEXT NOT NULL,
	failed_attempt INTEGER NOT NULL,
	next_attempt   INTEGER NOT NULL,
	failure_kind   TEXT NOT NULL,
	backoff_ms     INTEGER NOT NULL,
	due_ms         INTEGER NOT NULL,
	scheduled_ms   INTEGER NOT NULL,
	PRIMARY KEY (run_id, node_id, activation_id)
) STRICT;

CREATE INDEX retry_schedules_due ON retry_schedules (run_id, due_ms, node_id, activation_id);

CREATE TABLE events (
	run_id     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	payload    TEXT,
	created_ms INTEGER NOT NULL,
	PRIMARY KEY (run_id, seq)
) STRICT;
