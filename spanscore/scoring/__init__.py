"""From ready runs to score rows: the live dispatcher, its workers, offline scoring and backfill."""
