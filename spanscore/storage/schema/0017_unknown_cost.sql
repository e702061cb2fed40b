-- Judge cost that litellm could not price is unknown, not 0 (#40 item 6): scores.CostUsd is NULL for a
-- score with any unpriced judge call, and the roll-ups count such scores (UnpricedState) beside the
-- priced sum, so every cost view says NULL (unknown) where a 0 used to be summed in. The statements are
-- written out by spanscore/storage/schema/unknown_cost.py, which says why they run in this order.

{rollup_unknown_cost_drop_views};

ALTER TABLE {database}.scores MODIFY COLUMN CostUsd Nullable(Float64);

-- Rows stored before this migration said "unknown" in their attributes only; they become NULL. A
-- mutation: ClickHouse rewrites the parts in the background, and reads see the new value once it ends.
ALTER TABLE {database}.scores UPDATE CostUsd = NULL WHERE Attributes['judge.cost'] = 'unknown';

{rollup_unknown_cost_columns};

{rollup_unknown_cost_history};

{rollup_unknown_cost_views};

{dashboard_unknown_cost_views};
