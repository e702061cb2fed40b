-- The rule set a score or decision was made under: the content hash of the rules (see
-- spanscore.sampling.rule_sets), so rows from before and after a live rule change can be told
-- apart, and replicas given the same rules write the same value. Rows written before this
-- migration read as '' (unknown).
ALTER TABLE {database}.scores ADD COLUMN IF NOT EXISTS RuleVersion LowCardinality(String) DEFAULT '' CODEC(ZSTD(1));

ALTER TABLE {database}.score_decisions ADD COLUMN IF NOT EXISTS RuleVersion LowCardinality(String) DEFAULT '' CODEC(ZSTD(1));
