"""The write path: batching, group commit, the spool and its replay, salvage and dead letters."""
