-- Runs by status, in id order: a status-filtered run listing reads only
-- the runs it returns.
CREATE INDEX runs_by_status ON runs (status, id);
