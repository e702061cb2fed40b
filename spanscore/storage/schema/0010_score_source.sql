-- Scores from outside spanscore in the same table: people's labels and applications' own
-- evaluations (POST /api/v1/scores) and evaluation results that arrive over OTLP. Source says
-- who scored ('spanscore' for its own scorers); Author who gave the label when the sender said.
-- An outside score's Rule is 'source:<source>', so the roll-ups and dashboards split it from
-- the rules without a change to their views.
ALTER TABLE {database}.scores ADD COLUMN IF NOT EXISTS Source LowCardinality(String) DEFAULT 'spanscore' CODEC(ZSTD(1));

ALTER TABLE {database}.scores ADD COLUMN IF NOT EXISTS Author String DEFAULT '' CODEC(ZSTD(1));
