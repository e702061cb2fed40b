-- A read-only ClickHouse user for spanscore's query API (storage.query_dsn).
-- Run as an administrator; replace the password and, if you changed storage.database, the database name.
-- Check it with: spanscore config check -c <config> --dsn clickhouse://spanscore_query:<password>@<host>:8123/ --role query
-- The limits below must equal what spanscore sends (storage.query_max_*): a readonly user cannot change a setting.
-- The engine enforces all of this whatever text a query carries; spanscore's own parse check is a second line.

CREATE SETTINGS PROFILE IF NOT EXISTS spanscore_query_profile SETTINGS
    readonly = 1 CONST,                 -- no writes, no SET, no settings in queries
    max_execution_time = 10 CONST,      -- seconds per query
    max_memory_usage = 1073741824 CONST, -- 1 GiB per query
    max_result_rows = 100000 CONST,
    max_result_bytes = 134217728 CONST,
    result_overflow_mode = 'throw' CONST,
    timeout_overflow_mode = 'throw' CONST,
    max_threads = 2 CONST,              -- spanscore sends these with every request (guard.engine_settings):
    max_block_size = 1024 CONST,        -- the same values here, so a readonly profile accepts them
    function_range_max_elements_in_block = 1000000 CONST,
    max_concurrent_queries_for_user = 12;  -- per replica storage.query_readers + 1 (3), for the shipped 3 replicas and room

CREATE USER IF NOT EXISTS spanscore_query
    IDENTIFIED WITH sha256_password BY 'CHANGE-ME'
    SETTINGS PROFILE 'spanscore_query_profile';

-- SELECT on spanscore's database and nothing else: no SOURCES (FILE, URL, REMOTE, S3, ...), no dictionaries,
-- no other databases, no system tables beyond what every user sees.
REVOKE ALL ON *.* FROM spanscore_query;
GRANT SELECT, SHOW TABLES ON spanscore.* TO spanscore_query;
