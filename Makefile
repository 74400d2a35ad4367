# Two commands for a fresh machine: `make demo` and `make test` (see README).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
DEB_PACKAGES := redis-server redis-tools prometheus prometheus-redis-exporter

.PHONY: demo test install debs lint bench clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch is pinned first so that the resolver takes the CPU build on local disk.
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q "torch==2.13.0"
	$(PIP) install -q -e ".[dev,serve,ray]"
	touch $(STAMP)

install: $(STAMP)

debs:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@# Debian starts redis-server as a service on install where systemd runs; tests use their own on free ports.

demo: install
	$(VENV)/bin/cachetuner demo

test: install debs
	$(VENV)/bin/python -m pytest -q

lint: install
	$(VENV)/bin/ruff check cachetuner tests
	$(VENV)/bin/mypy cachetuner

clean:
	rm -rf $(VENV) mlruns mlflow.db .pytest_cache
