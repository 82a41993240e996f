.PHONY: setup run test lint format

setup:
	bash scripts/setup.sh

run: setup
	bash scripts/run.sh

test: setup
	bash scripts/test.sh

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && PYTHONPATH=backend:. .venv/bin/mypy backend worker migrations bench tests

format:
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .
