-- An attempt's handoff holder token: the random token of its last handoff
-- write ('' while the handoff is pending or unknown, and for every handoff
-- recorded before this version).
ALTER TABLE attempts ADD COLUMN handoff_token TEXT NOT NULL DEFAULT '';
-- An activation's attempt timeout in milliseconds (0 = none set: the
-- engine's default applies, as for every activation created before this
-- version).
ALTER TABLE activations ADD COLUMN attempt_timeout_ms INTEGER NOT NULL DEFAULT 0;
