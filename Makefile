# Nimbus Search: everything a developer or CI runs goes through these targets.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SHELL  := /bin/bash
.SHELLFLAGS := -eo pipefail -c
# pip here warns about every missing local mirror folder; keep the output readable.
QUIET_PIP := { grep -v 'is ignored: it is neither a file nor a directory' || true; }

.PHONY: deploy destroy migrate index-emr iac install lock release demo test test-unit lint bench services clean

LOCK   := requirements/lock.txt
RUNTIME_LOCK := requirements/runtime.lock

# `make install`: .venv at the repo root with the exact, hash-checked versions of the lock file,
# then the project itself (editable, no dependency resolution); `pip check` fails if the lock no
# longer satisfies pyproject.toml's ranges (run `make lock`).
install: $(STAMP)
$(STAMP): pyproject.toml $(LOCK)
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (mrjob 0.7.4 needs Python 3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 2>&1 | $(QUIET_PIP)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK) 2>&1 | $(QUIET_PIP)
	$(BIN)/python -m pip install --quiet --no-deps -e . 2>&1 | $(QUIET_PIP)
	$(BIN)/python -m pip check
	touch $(STAMP)

# `make lock`: re-resolve pyproject.toml's ranges (runtime + test extras) for CPython 3.11 on
# x86_64 Linux into the lock file, with hashes; then the release's runtime lock, the same versions
# without the test extras (constrained by the first). Commit the result with the change that needed it.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv 2>&1 | $(QUIET_PIP)
	$(BIN)/uv pip compile pyproject.toml --extra test --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --custom-compile-command "make lock" -o $(LOCK)
	$(BIN)/uv pip compile pyproject.toml --constraint $(LOCK) --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --custom-compile-command "make lock" -o $(RUNTIME_LOCK)
	$(BIN)/uv pip compile requirements/iac.in --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --custom-compile-command "make lock" -o $(IAC_LOCK)

# `make release`: the artifact instances and EMR nodes install (services/release.py): the wheel,
# a wheelhouse of the runtime lock's dependencies, requirements.txt with every file's hash, the
# bootstrap, AWS's RDS CA bundle and release.json, in dist/release/<version>-<digest12>/. Needs PyPI
# and AWS's trust store; the nodes need neither. Pin the bundle's sha256 with the stack's
# RdsCaBundleSha256 parameter (docs/deploy.md).
RDS_CA_URL := https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem
release: install
	mkdir -p build
	curl -fsS --proto =https --retry 3 -o build/rds-ca.pem $(RDS_CA_URL)
	$(BIN)/python -m services.release --out dist/release --rds-ca build/rds-ca.pem

# checkov (the template's security scan in `make test`) in a venv of its own, from its own lock.
IAC_VENV := .venv-iac
IAC_LOCK := requirements/iac.lock
iac: $(IAC_VENV)/.installed
$(IAC_VENV)/.installed: $(IAC_LOCK)
	test -x $(IAC_VENV)/bin/python || $(PYTHON) -m venv $(IAC_VENV)
	$(IAC_VENV)/bin/python -m pip install --quiet --require-hashes -r $(IAC_LOCK) 2>&1 | $(QUIET_PIP)
	touch $@

# Whole pipeline on embedded defaults, offline: loopback web from the sample data in data/,
# crawl, MapReduce index + PageRank, then serve the UI on http://127.0.0.1:8000.
demo: install
	$(BIN)/nimbus demo

# Local services the tests talk to: MariaDB (started if not running) and Chromium.
services:
	bash scripts/ensure-services.sh

# The slowest tests are listed at the end: the suite must stay under 20 minutes (README).
test: install services iac
	$(BIN)/python -m pytest -q --durations=25 tests

test-unit: install
	$(BIN)/python -m pytest -q tests/unit

# The checks a maintainer relies on: style, formatting, types (strict on the ground floor) and
# the layer contract in pyproject.toml (docs/architecture.md).
LINT_PATHS := services mapreduce tests $(wildcard benchmarks)
lint: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy
	$(BIN)/lint-imports

# Benchmarks against named peers, same data, same run (figures in docs/benchmarks.md).
# The project's bytecode is compiled first, as pip does for an installed wheel: an editable
# install under PYTHONDONTWRITEBYTECODE=1 (set on the project machine) compiles every module
# again in every process start, a cost every crawler process's start would show (docs/benchmarks.md).
bench: install
	$(BIN)/python -m pip install --quiet -e '.[test,bench]' 2>&1 | $(QUIET_PIP)
	$(BIN)/python -m compileall -q services benchmarks
	$(BIN)/python -m benchmarks.crawl --rounds 3
	$(BIN)/python -m benchmarks.crawl_threads
	$(BIN)/python -m benchmarks.committer --worker
	$(BIN)/python -m benchmarks.pagerank
	$(BIN)/python -m benchmarks.index
	$(BIN)/python -m benchmarks.incremental
	$(BIN)/python -m benchmarks.delta_ranking
	$(BIN)/python -m benchmarks.freshness
	$(BIN)/python -m benchmarks.search_page
	$(BIN)/python -m benchmarks.block_cache
	$(BIN)/python -m benchmarks.langid
	$(BIN)/python -m benchmarks.parsers
	$(BIN)/python -m benchmarks.ranking_peers
	$(BIN)/python -m benchmarks.word_recall
	$(BIN)/python -m benchmarks.archives

clean:
	rm -rf var build *.egg-info .pytest_cache .ruff_cache

# AWS (docs/deploy.md): credentials and region from the standard chain (AWS_PROFILE, AWS_REGION).
# `make deploy PARAMS="CrawlerCount=3 SearchMinCount=3"`; `make destroy DELETE_DATA=1` also drops the data.
STACK ?= nimbus
PARAMS ?=
deploy: install
	$(BIN)/nimbus deploy --stack-name $(STACK) $(foreach p,$(PARAMS),--param $(p))

destroy: install
	$(BIN)/nimbus destroy --stack-name $(STACK) $(if $(DELETE_DATA),--delete-data)

# Schema migrations (Alembic, services/storage/sql/migrations) on NIMBUS_DATABASE_URL; every
# process also applies them on start, under a lock.
migrate: install
	$(BIN)/nimbus migrate

# An index build on EMR with the settings `nimbus deploy` prints (NIMBUS_EMR_*, AWS_REGION, the
# s3:// blob URL, NIMBUS_DATABASE_INSTANCE): one pooled cluster per build, stopped when idle.
index-emr: install
	$(BIN)/nimbus index --runner emr
