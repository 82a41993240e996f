#!/usr/bin/env bash
# Installs what is missing on a Debian machine (run as root) and prepares the Python environment.
# Safe to run again: it only installs what is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  mariadb-server mariadb-client mariadb-backup mydumper sysbench
  redis-server postgresql strace zstd pigz pbzip2 util-linux python3-venv
  clang bpftool libbpf-dev libelf-dev zlib1g-dev fuse3 libfuse3-dev pkg-config gcc make
  nodejs chromium
)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# nodejs from NodeSource carries npm; Debian's own nodejs needs the separate npm package.
command -v npm >/dev/null 2>&1 || missing+=(npm)
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

# The eBPF capture's probes and reader (C, compiled against this kernel's BTF); without BTF the worker
# reports eBPF as unavailable and falls back, so a failed build here is not fatal.
if [ -f worker/capture/iotrace/Makefile ] && [ -e /sys/kernel/btf/vmlinux ]; then
  make -s -C worker/capture/iotrace || echo "setup: iotrace (eBPF capture) did not build; jobs will use strace or FUSE"
fi

# The FUSE oplog passthrough is C (speed matters on every page write); rebuilt only when its source changes.
if [ -f worker/capture/oplogfs/Makefile ]; then
  make -s -C worker/capture/oplogfs
fi

# The browser app: dependencies keyed by the lock file, then a build the API serves.
if [ -f frontend/package-lock.json ]; then
  lock_sha=$(sha256sum frontend/package-lock.json | cut -d' ' -f1)
  if [ "$(cat frontend/node_modules/.lock.sha 2>/dev/null)" != "$lock_sha" ]; then
    (cd frontend && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sha" > frontend/node_modules/.lock.sha
  fi
  (cd frontend && npm run --silent build)
fi
if [ -f e2e/package-lock.json ]; then
  lock_sha=$(sha256sum e2e/package-lock.json | cut -d' ' -f1)
  if [ "$(cat e2e/node_modules/.lock.sha 2>/dev/null)" != "$lock_sha" ]; then
    (cd e2e && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sha" > e2e/node_modules/.lock.sha
  fi
fi
