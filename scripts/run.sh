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
if [ ! -e "$data_dir/backups/demo/shop.sql.gz" ]; then
  echo "run: making the demo backup under $data_dir/backups/demo"
  .venv/bin/python -m worker.demo "$data_dir/backups/demo"
fi

.venv/bin/celery -A worker.celery_app worker --loglevel INFO --concurrency 2 &
worker_pid=$!
trap 'kill $worker_pid 2>/dev/null; wait $worker_pid 2>/dev/null' EXIT INT TERM
echo "run: restorescope at http://127.0.0.1:$port (API docs at /docs)"
.venv/bin/uvicorn app.main:app --host 127.0.0.1 --port "$port"
