#!/bin/bash
# compose.yaml: the clickhouse image runs this once, on the first start of an empty data volume
# (/docker-entrypoint-initdb.d), as the administrator CLICKHOUSE_USER. It creates deploy/clickhouse's two users,
# spanscore_owner and spanscore_query, from owner-user.sql and query-user.sql with the passwords in deploy/.env.
set -euo pipefail
create() {
  local file=$1 password=$2
  case $password in
    '' | *[!A-Za-z0-9_-]*)
      echo "compose-users.sh: the password for $file must be letters, digits, _ and - (deploy/.env)" >&2
      exit 1 ;;
  esac
  sed "s/'CHANGE-ME'/'$password'/" "${SPANSCORE_USERS_DIR:-/etc/spanscore-users}/$file" |
    clickhouse client --host 127.0.0.1 --user "$CLICKHOUSE_USER" --password "$CLICKHOUSE_PASSWORD" --multiquery
}
create owner-user.sql "${SPANSCORE_OWNER_PASSWORD:-}"
create query-user.sql "${SPANSCORE_QUERY_PASSWORD:-}"
