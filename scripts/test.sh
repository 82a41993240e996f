#!/usr/bin/env bash
# Every check and test: lint, types, then the suite on SQLite and the API tests again on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=backend:.

bash scripts/services.sh postgres
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy backend worker migrations bench tests
.venv/bin/pytest
RESTORESCOPE_TEST_DATABASE=postgresql .venv/bin/pytest -m "not integration"
