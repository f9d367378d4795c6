# schedlab — the two commands of the README: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(abspath $(VENV))/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(VIRTUAL_ENV)/bin:$(PATH)

.PHONY: setup build demo test test-rust test-python lint bench clean

# The virtualenv with maturin and the Python dependencies (from pyproject.toml).
$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.16,<2"
	touch $@

setup: $(VENV)/.ready

# Builds the Rust extension in release mode and installs the package with its dependencies.
build: setup
	maturin develop --release --quiet --extras test

demo: build
	$(PY) -m schedlab.demo --out out/demo

lint: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
	ruff check python tests
	ruff format --check python tests

# The core's tests run a second time in a debug build: its debug assertions guard the
# invariants of the few unchecked look-ups on the per-packet path.
test-rust:
	cargo test --workspace --release
	cargo test -p schedlab-core

test-python: build
	pytest -q

test: build lint test-rust test-python

bench: build
	bash bench/run_all.sh

clean:
	rm -rf $(VENV) target out
