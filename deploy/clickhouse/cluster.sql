-- owner-user.sql and query-user.sql for a cluster (storage.cluster set): the same profiles, users and grants,
-- created on every node ON CLUSTER, plus the CLUSTER grant that spanscore's ON CLUSTER migrations need.
-- '{cluster}' is the server macro; write the cluster's name instead if your servers do not define it.
-- Run as an administrator on one node; replace the passwords and, if you changed storage.database, the database.
--
-- Not needed when the servers keep users in replicated access storage (user_directories: replicated): a
-- user created on one node then exists on all, and owner-user.sql + query-user.sql, run once, are enough
-- (add the CLUSTER grant below to the owner). Users defined in users.xml are per node and cannot be
-- granted with SQL at all.
-- Distributed tables forward inserts and reads to the shards as the user named in the cluster's
-- remote_servers definition, not as spanscore_owner: that user needs SELECT and INSERT on spanscore.* too.
-- Servers with access_control_improvements.table_engines_require_grant also need
-- GRANT TABLE ENGINE ON ReplicatedMergeTree (and each Replicated*MergeTree, Distributed, Null) TO spanscore_owner.

CREATE SETTINGS PROFILE IF NOT EXISTS spanscore_owner_profile ON CLUSTER '{cluster}' SETTINGS
    async_insert = 0 CONST,
    wait_for_async_insert = 1 CONST,
    insert_deduplicate = 1;

CREATE USER IF NOT EXISTS spanscore_owner ON CLUSTER '{cluster}'
    IDENTIFIED WITH sha256_password BY 'CHANGE-ME'
    SETTINGS PROFILE 'spanscore_owner_profile';

REVOKE ON CLUSTER '{cluster}' ALL ON *.* FROM spanscore_owner;
GRANT ON CLUSTER '{cluster}' CREATE DATABASE, CREATE TABLE, CREATE VIEW, DROP VIEW ON spanscore.* TO spanscore_owner;
GRANT ON CLUSTER '{cluster}' ALTER ADD COLUMN, ALTER ORDER BY, ALTER SETTINGS, ALTER TTL, ALTER ADD PROJECTION, ALTER MATERIALIZE PROJECTION ON spanscore.* TO spanscore_owner;
GRANT ON CLUSTER '{cluster}' SELECT, INSERT, SHOW TABLES ON spanscore.* TO spanscore_owner;
GRANT ON CLUSTER '{cluster}' KILL QUERY ON *.* TO spanscore_owner;
-- every migration runs ON CLUSTER (spanscore/storage/schema/cluster.py)
GRANT ON CLUSTER '{cluster}' CLUSTER ON *.* TO spanscore_owner;

CREATE SETTINGS PROFILE IF NOT EXISTS spanscore_query_profile ON CLUSTER '{cluster}' SETTINGS
    readonly = 1 CONST,
    max_execution_time = 10 CONST,
    max_memory_usage = 1073741824 CONST,
    max_result_rows = 100000 CONST,
    max_result_bytes = 134217728 CONST,
    result_overflow_mode = 'throw' CONST,
    timeout_overflow_mode = 'throw' CONST,
    max_threads = 2 CONST,
    max_block_size = 1024 CONST,
    function_range_max_elements_in_block = 1000000 CONST,
    max_concurrent_queries_for_user = 12;

CREATE USER IF NOT EXISTS spanscore_query ON CLUSTER '{cluster}'
    IDENTIFIED WITH sha256_password BY 'CHANGE-ME'
    SETTINGS PROFILE 'spanscore_query_profile';

REVOKE ON CLUSTER '{cluster}' ALL ON *.* FROM spanscore_query;
GRANT ON CLUSTER '{cluster}' SELECT, SHOW TABLES ON spanscore.* TO spanscore_query;
