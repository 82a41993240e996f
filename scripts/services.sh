#!/usr/bin/env bash
# Starts the local services the app and the tests need, if they are not running yet.
set -euo pipefail

start_redis() {
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "services: starting redis on 127.0.0.1:6379"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/restorescope.log
    for _ in $(seq 50); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
  fi
}

start_postgres() {
  if ! pg_isready -q -h /var/run/postgresql; then
    echo "services: starting postgresql"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start
    for _ in $(seq 100); do pg_isready -q -h /var/run/postgresql && break; sleep 0.1; done
  fi
  # The tests connect over the socket as the current user: a superuser role of that name must exist.
  if ! psql -h /var/run/postgresql -d postgres -Atc "select 1" >/dev/null 2>&1; then
    su postgres -c "createuser --superuser $(id -un)" 2>/dev/null || true
  fi
}

for service in "$@"; do
  "start_$service"
done
