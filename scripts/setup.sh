#!/usr/bin/env bash
# Installs what is missing on a Debian machine (run as root) and prepares the Python environment.
# Safe to run again: it only installs what is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  mariadb-server mariadb-client mariadb-backup mydumper sysbench
  redis-server postgresql strace zstd pigz util-linux python3-venv
)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha
wanted=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/pip install -q --upgrade pip 2>&1 | grep -v "is ignored" || true
  .venv/bin/pip install -q -r requirements-dev.txt 2>&1 | grep -v "is ignored" || true
  .venv/bin/python -c "import fastapi, celery, sqlalchemy, alembic, pymysql, zstandard, psycopg" 
  echo "$wanted" > "$stamp"
fi
