PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# two stamps: the demo needs only the core package, the tests need the dev extras
CORE_STAMP := $(VENV)/.core-$(HASH)
STAMP := $(VENV)/.dev-$(HASH)

.PHONY: demo test test-ray test-verl test-openenv lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(CORE_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	rm -f $(VENV)/.core-*
	touch $(CORE_STAMP)

$(STAMP): $(CORE_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.dev-*
	touch $(STAMP)

demo: $(CORE_STAMP)
	$(BIN)/python -m veritask._cli.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -n auto

# Ray adds about 400 MB and a minute of install, so its executor tests run in a virtualenv of
# their own, outside `make test`.
RVENV := .venv-ray
RSTAMP := $(RVENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(RSTAMP): pyproject.toml
	$(PYTHON) -m venv $(RVENV)
	$(RVENV)/bin/python -m pip install --quiet --upgrade pip
	$(RVENV)/bin/python -m pip install --quiet -e '.[ray]' 'pytest>=8,<10' 'hypothesis>=6.100,<7'
	rm -f $(RVENV)/.installed-*
	touch $(RSTAMP)

test-ray: $(RSTAMP)
	$(RVENV)/bin/python -m pytest -p no:cacheprovider tests/pipeline/test_ray_executor.py

# verl >= 0.8 pins transformers below the dev extras' and pulls in ray (about 2 GB with torch),
# so its agent loop is tested against the real package in a virtualenv of its own, outside
# `make test` (which runs the same episodes against a re-statement of verl's interface).
VVENV := .venv-verl
VSTAMP := $(VVENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(VSTAMP): pyproject.toml
	$(PYTHON) -m venv $(VVENV)
	$(VVENV)/bin/python -m pip install --quiet --upgrade pip
	$(VVENV)/bin/python -m pip install --quiet -e '.[verl]' 'pytest>=8,<10' 'hypothesis>=6.100,<7'
	rm -f $(VVENV)/.installed-*
	touch $(VSTAMP)

test-verl: $(VSTAMP)
	$(VVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_verl_agent_loop_real.py tests/integrations/test_verl_agent_loop.py

# The current openenv package needs fastmcp 3, which pins mcp below the dev extras' 2.x, so the
# OpenEnv server is tested against the real package (its EnvClient and MCPToolClient, and
# `openenv validate` on examples/openenv) in a virtualenv of its own, outside `make test`
# (where those tests skip).
OVENV := .venv-openenv
OSTAMP := $(OVENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(OSTAMP): pyproject.toml
	$(PYTHON) -m venv $(OVENV)
	$(OVENV)/bin/python -m pip install --quiet --upgrade pip
	$(OVENV)/bin/python -m pip install --quiet -e '.[openenv]' 'pytest>=8,<10' 'hypothesis>=6.100,<7'
	rm -f $(OVENV)/.installed-*
	touch $(OSTAMP)

test-openenv: $(OSTAMP)
	$(OVENV)/bin/openenv validate examples/openenv
	$(OVENV)/bin/python -m pytest -p no:cacheprovider tests/serve/test_openenv.py
	$(OVENV)/bin/python -m pytest -p no:cacheprovider tests/serve/test_server_bad_inputs.py -k openenv

bench: $(STAMP)
	$(BIN)/python benchmarks/env_bench.py

clean:
	rm -rf $(VENV) $(RVENV) $(VVENV) $(OVENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
