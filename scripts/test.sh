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
# The browser app: lint, unit tests and a fresh build (with its type check), then Playwright against the real
# stack that e2e/stack.py starts (private Redis, API serving the build, a worker); screenshots go to e2e/screenshots.
(cd frontend && npm run --silent lint && npm test -- --run && npm run --silent build)
(cd e2e && npx tsc --noEmit && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npx playwright test)
