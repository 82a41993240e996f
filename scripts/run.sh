#!/usr/bin/env bash
# Runs the whole app on embedded defaults: SQLite job store, local Redis, sandbox MariaDB servers.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=backend:.
data_dir=${RESTORESCOPE_DATA_DIR:-$PWD/var}
export RESTORESCOPE_DATA_DIR=$data_dir

port=${RESTORESCOPE_PORT:-8000}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run: port $port is already in use (is restorescope already running?); stop it or set RESTORESCOPE_PORT" >&2
  exit 1
fi

bash scripts/services.sh redis
.venv/bin/alembic upgrade head
# The first admin, only while the job store has no user: RESTORESCOPE_ADMIN_PASSWORD, or a printed one-time password.
.venv/bin/python -m app.users.cli first-admin
if [ ! -e "$data_dir/backups/demo/shop.sql.gz" ] || [ ! -d "$data_dir/backups/demo/shop-mariabackup" ]; then
  echo "run: making the demo backups (mysqldump files, --tab, mydumper and mariabackup directories) under" \
    "$data_dir/backups/demo"
  .venv/bin/python -m worker.demo "$data_dir/backups/demo" --directories --physical
fi

.venv/bin/celery -A worker.celery_app worker --loglevel INFO --concurrency 2 &
worker_pid=$!
# Celery beat: sends the scheduler's tick (scheduled drills, overdue drills, notifications). Run exactly one.
.venv/bin/celery -A worker.celery_app beat --loglevel INFO &
beat_pid=$!
trap 'kill $worker_pid $beat_pid 2>/dev/null; wait $worker_pid $beat_pid 2>/dev/null' EXIT INT TERM
echo "run: restorescope at http://127.0.0.1:$port (log in there; API docs at /docs)"
.venv/bin/uvicorn app.main:app --host 127.0.0.1 --port "$port"
