#!/bin/sh
# The official postgres image's start, as far as compose.yaml uses it: a cluster in PGDATA made on the
# first start with POSTGRES_USER (a password from POSTGRES_PASSWORD) and the database POSTGRES_DB.
set -eu
PGDATA=/var/lib/postgresql/data
BIN=$(echo /usr/lib/postgresql/*/bin)
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pw
    chown postgres /tmp/pw
    su postgres -s /bin/sh -c "$BIN/initdb -D $PGDATA -U $POSTGRES_USER --pwfile=/tmp/pw --auth-host=scram-sha-256 --auth-local=trust"
    rm /tmp/pw
    echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
    su postgres -s /bin/sh -c "$BIN/pg_ctl -D $PGDATA -w -o '-c listen_addresses=' start"
    su postgres -s /bin/sh -c "psql -U $POSTGRES_USER -d postgres -c 'CREATE DATABASE $POSTGRES_DB'"
    su postgres -s /bin/sh -c "$BIN/pg_ctl -D $PGDATA -w stop"
fi
exec su postgres -s /bin/sh -c "exec $BIN/postgres -D $PGDATA -c listen_addresses='*'"
