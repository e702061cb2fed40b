-- spanscore's owner user on a ClickHouse server: runs `spanscore migrate`, the service's inserts (live,
-- spool replay, dead-letter replay) and its retention changes. Point storage.dsn at it.
-- Run as an administrator; replace the password and, if you changed storage.database, the database name.
-- Check the result with: spanscore config check -c <config> --dsn clickhouse://spanscore_owner:<password>@<host>:8123/
-- On a cluster use cluster.sql instead; the query API's read-only user is in query-user.sql.

-- An OK from spanscore means the rows are stored (acknowledge: stored) or in its spool. An insert the server
-- only queued (async_insert without waiting) would make that OK a lie, so the profile pins synchronous inserts.
-- readonly is not pinned: with storage.query_dsn empty, spanscore's own read connections set readonly=1 on
-- themselves, which a CONST readonly = 0 would refuse.
CREATE SETTINGS PROFILE IF NOT EXISTS spanscore_owner_profile SETTINGS
    async_insert = 0 CONST,
    wait_for_async_insert = 1 CONST,
    insert_deduplicate = 1;              -- a retried span batch is dropped by the tables' deduplication windows

CREATE USER IF NOT EXISTS spanscore_owner
    IDENTIFIED WITH sha256_password BY 'CHANGE-ME'
    SETTINGS PROFILE 'spanscore_owner_profile';

-- Exactly what spanscore runs (spanscore/storage/access.py lists each grant with the statement that needs it):
REVOKE ALL ON *.* FROM spanscore_owner;
-- migrations: CREATE DATABASE IF NOT EXISTS, CREATE TABLE / [MATERIALIZED] VIEW, CREATE OR REPLACE VIEW, DROP VIEW
GRANT CREATE DATABASE, CREATE TABLE, CREATE VIEW, DROP VIEW ON spanscore.* TO spanscore_owner;
-- migrations: ADD COLUMN, MODIFY ORDER BY, MODIFY SETTING, ADD and MATERIALIZE PROJECTION; retention (storage.*_ttl_days): MODIFY TTL, REMOVE TTL
GRANT ALTER ADD COLUMN, ALTER ORDER BY, ALTER SETTINGS, ALTER TTL, ALTER ADD PROJECTION, ALTER MATERIALIZE PROJECTION ON spanscore.* TO spanscore_owner;
-- the write path and the backfills of migrations; EXISTS TABLE for the schema check of replicas with migrate: false
GRANT SELECT, INSERT, SHOW TABLES ON spanscore.* TO spanscore_owner;
-- cancelling a query API query whose HTTP client went away: it runs as spanscore_query, another user
GRANT KILL QUERY ON *.* TO spanscore_owner;
