PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# two stamps: the demo needs only the core package, the tests need the dev extras
CORE_STAMP := $(VENV)/.core-$(HASH)
STAMP := $(VENV)/.dev-$(HASH)

.PHONY: demo test test-ray test-verl test-openenv test-trl test-verifiers test-art test-skyrl test-areal test-rllm lint typecheck bench clean

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

# Integrations whose packages the dev extras cannot hold (or that pull in hundreds of MB) are
# tested in a virtualenv of their own, made from the package's extra and the test packages:
# $(call framework_venv,DIR,EXTRA). Each `test-*` target plays real episodes through the
# framework's own entry point against a local stand-in model.
FRAMEWORK_TEST_PACKAGES := 'pytest>=8,<10' 'hypothesis>=6.100,<7' 'httpx>=0.28,<1'
define framework_venv
$(1)/.installed-$(HASH): pyproject.toml
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet -e '.[$(2)]' $(FRAMEWORK_TEST_PACKAGES)
	rm -f $(1)/.installed-*
	touch $$@
endef

# Ray adds about 400 MB and a minute of install, so its executor tests run in a virtualenv of
# their own, outside `make test`.
RVENV := .venv-ray
$(eval $(call framework_venv,$(RVENV),ray))

test-ray: $(RVENV)/.installed-$(HASH)
	$(RVENV)/bin/python -m pytest -p no:cacheprovider tests/pipeline/test_ray_executor.py

# verl >= 0.8 pins transformers below the dev extras' and pulls in ray (about 2 GB with torch),
# so its agent loop is tested against the real package in a virtualenv of its own, outside
# `make test` (which runs the same episodes against a re-statement of verl's interface).
VVENV := .venv-verl
$(eval $(call framework_venv,$(VVENV),verl))

test-verl: $(VVENV)/.installed-$(HASH)
	$(VVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_verl_agent_loop_real.py tests/integrations/test_verl_agent_loop.py

# The current openenv package needs fastmcp 3, which pins mcp below the dev extras' 2.x, so the
# OpenEnv server is tested against the real package (its EnvClient and MCPToolClient, and
# `openenv validate` on examples/openenv) in a virtualenv of its own, outside `make test`
# (where those tests skip).
OVENV := .venv-openenv
$(eval $(call framework_venv,$(OVENV),openenv))

test-openenv: $(OVENV)/.installed-$(HASH)
	$(OVENV)/bin/openenv validate examples/openenv
	$(OVENV)/bin/python -m pytest -p no:cacheprovider tests/serve/test_openenv.py
	$(OVENV)/bin/python -m pytest -p no:cacheprovider tests/serve/test_server_bad_inputs.py -k openenv

# TRL and verifiers are in the dev extras.
test-trl: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/integrations/test_trl.py tests/integrations/test_trl_users.py

test-verifiers: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/integrations/test_verifiers_env.py tests/integrations/test_verifiers_v1.py

AVENV := .venv-art
$(eval $(call framework_venv,$(AVENV),art))
test-art: $(AVENV)/.installed-$(HASH)
	$(AVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_art_real.py

SVENV := .venv-skyrl
$(eval $(call framework_venv,$(SVENV),skyrl))
test-skyrl: $(SVENV)/.installed-$(HASH)
	$(SVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_skyrl_real.py

# AReaL 1.0 declares its whole training stack (torch below 2.11 with its CUDA libraries,
# transformers up to 5.3, openhands, litellm[proxy]: several GB), and its workflow modules import
# torch. veritask never depends on LiteLLM, so the `areal` extra does not name areal: this
# virtualenv installs it (AREAL_SPEC) beside the extra, the way an AReaL user already has it.
AREAL_SPEC ?= areal>=1.0,<2
ARVENV := .venv-areal
$(ARVENV)/.installed-$(HASH): pyproject.toml
	$(PYTHON) -m venv $(ARVENV)
	$(ARVENV)/bin/python -m pip install --quiet --upgrade pip
	$(ARVENV)/bin/python -m pip install --quiet '$(AREAL_SPEC)'
	$(ARVENV)/bin/python -m pip install --quiet -e '.[areal]' $(FRAMEWORK_TEST_PACKAGES)
	rm -f $(ARVENV)/.installed-*
	touch $@
test-areal: $(ARVENV)/.installed-$(HASH)
	$(ARVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_areal_real.py

# rLLM is not on PyPI: it is installed from its repository (RLLM_SOURCE), then the extra.
RLLM_SOURCE ?= git+https://github.com/rllm-org/rllm.git
RLVENV := .venv-rllm
$(RLVENV)/.installed-$(HASH): pyproject.toml
	$(PYTHON) -m venv $(RLVENV)
	$(RLVENV)/bin/python -m pip install --quiet --upgrade pip
	$(RLVENV)/bin/python -m pip install --quiet '$(RLLM_SOURCE)'
	$(RLVENV)/bin/python -m pip install --quiet -e '.[rllm]' $(FRAMEWORK_TEST_PACKAGES)
	rm -f $(RLVENV)/.installed-*
	touch $@
test-rllm: $(RLVENV)/.installed-$(HASH)
	$(RLVENV)/bin/python -c 'import rllm.types, rllm.eval.types'
	$(RLVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_adapters.py -k rllm

bench: $(STAMP)
	$(BIN)/python benchmarks/env_bench.py

clean:
	rm -rf $(VENV) $(RVENV) $(VVENV) $(OVENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

	rm -rf $(VENV) $(RVENV) $(VVENV) $(AVENV) $(SVENV) $(ARVENV) $(RLVENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
