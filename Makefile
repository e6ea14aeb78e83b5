# Two set-up commands for a fresh machine with Python 3.11+: `make chat` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Where `make train` and `make rebuild` look for PyTorch's CPU build; empty (TORCH_INDEX=) when a local wheel or
# the registries already carry it, so pip does not retry an index this machine cannot reach.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_FROM := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))

.PHONY: chat test run check lint format train rebuild vectors clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Unhooked needs Python 3.11 or newer; set PYTHON=python3.11 (or newer) and try again")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.runtime

chat: $(VENV)/.runtime  ## talk to the bot in this terminal
	$(BIN)/python -m bot chat

run: $(VENV)/.runtime  ## run the Telegram bot (needs TELEGRAM_BOT_TOKEN; reads .env if there is one)
	@if [ -f .env ]; then set -a; . ./.env; set +a; fi; exec $(BIN)/python -m bot run

check: $(VENV)/.runtime  ## check the content files
	$(BIN)/python -m bot check

lint: $(VENV)/.dev  ## ruff lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.dev  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: lint  ## lint, then the whole test suite on two workers (pytest-xdist)
	$(BIN)/python -m pytest -n 2

train: $(VENV)/.runtime  ## retrain the learned crisis screen (PyTorch's CPU build; about 30 minutes on two cores)
	$(BIN)/python -m pip install --quiet -e '.[train]' $(TORCH_FROM)
	$(BIN)/python -m bot safety train

rebuild: $(VENV)/.runtime  ## remake the model file from its shipped weights (no retraining), then its vectors
	$(BIN)/python -m pip install --quiet -e '.[train]' $(TORCH_FROM)
	$(BIN)/python -m bot safety rebuild
	$(BIN)/python -m bot safety vectors

vectors: $(VENV)/.runtime  ## after editing intents' examples: keep their vectors beside the model, so starts embed none
	$(BIN)/python -m bot safety vectors

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist build
