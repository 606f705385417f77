-- Joins: the activations of its run a join waits for (NULL for an
-- activation that is not a join, as for every activation created before
-- this version), encoded as predecessors are; how many of them are not yet
-- completed; and the reverse edges, the joins waiting for this activation
-- (NULL when none).
ALTER TABLE activations ADD COLUMN wait_for BLOB;
ALTER TABLE activations ADD COLUMN open_waits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE activations ADD COLUMN joins BLOB;
-- A fan-out group's settlement by the store (0 = owner settlement, as for
-- every group created before this version).
ALTER TABLE fan_out_groups ADD COLUMN fan_in INTEGER NOT NULL DEFAULT 0;
