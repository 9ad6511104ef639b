PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# two stamps: the demo needs only the core package, the tests need the dev extras
CORE_STAMP := $(VENV)/.core-$(HASH)
STAMP := $(VENV)/.dev-$(HASH)

.PHONY: demo test test-ray test-verl test-trl test-verifiers test-art test-skyrl test-areal test-rllm lint typecheck bench clean

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
	$(BIN)/python -m pytest

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

# One target per trainer framework: each plays a real episode through the framework's own entry
# point against a local stand-in model. TRL and verifiers are in the dev extras; the others pin
# what the dev extras cannot hold (or pull in hundreds of MB), so each gets a virtualenv of its
# own, made from the framework's extra: $(call framework_venv,DIR,EXTRA,MORE PIP ARGUMENTS).
define framework_venv
$(1)/.installed-$(HASH): pyproject.toml
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(1)/bin/python -m pip install --quiet -e '.[$(2)]' 'pytest>=8,<10' 'hypothesis>=6.100,<7' $(3)
	rm -f $(1)/.installed-*
	touch $$@
endef

test-trl: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/integrations/test_trl.py tests/integrations/test_trl_users.py

test-verifiers: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/integrations/test_verifiers_env.py tests/integrations/test_verifiers_v1.py

AVENV := .venv-art
$(eval $(call framework_venv,$(AVENV),art,'httpx>=0.28,<1'))
test-art: $(AVENV)/.installed-$(HASH)
	$(AVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_art_real.py

SVENV := .venv-skyrl
$(eval $(call framework_venv,$(SVENV),skyrl,'httpx>=0.28,<1'))
test-skyrl: $(SVENV)/.installed-$(HASH)
	$(SVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_skyrl_real.py

# AReaL 1.0 declares torch, vLLM-era transformers, openhands, litellm[proxy] and more (several
# GB); its workflow API needs none of them to run a workflow, so the extra installs areal with
# the few packages that API imports (see the note on trainers as their users run them).
ARVENV := .venv-areal
$(eval $(call framework_venv,$(ARVENV),areal,'httpx>=0.28,<1' 'starlette>=1.10,<2' 'uvicorn>=0.54,<1'))
test-areal: $(ARVENV)/.installed-$(HASH)
	$(ARVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_areal_real.py

RLVENV := .venv-rllm
$(eval $(call framework_venv,$(RLVENV),rllm,'httpx>=0.28,<1'))
test-rllm: $(RLVENV)/.installed-$(HASH)
	$(RLVENV)/bin/python -m pytest -p no:cacheprovider tests/integrations/test_rllm_real.py

bench: $(STAMP)
	$(BIN)/python benchmarks/env_bench.py

clean:
	rm -rf $(VENV) $(RVENV) $(VVENV) $(AVENV) $(SVENV) $(ARVENV) $(RLVENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
