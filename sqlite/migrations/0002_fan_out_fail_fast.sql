-- A fan-out group's settlement policy: 1 = fail-fast, 0 = wait-all (the
-- default, and what every group created before this version is).
ALTER TABLE fan_out_groups ADD COLUMN fail_fast INTEGER NOT NULL DEFAULT 0;
