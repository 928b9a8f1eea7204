# The README's two commands: `make run` (set up and open the app) and `make test`
# (set up and run the whole test suite). Both work from a fresh clone on Debian 12.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
APP_STAMP := $(VENV)/.app-installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: run test setup setup-test system-deps clean bundle bench

run: system-deps $(APP_STAMP)
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
		$(BIN)/gpu-workbench $(ARGS); \
	else \
		echo "No display found: running the window on a virtual display (xvfb-run)."; \
		xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/gpu-workbench $(ARGS); \
	fi

test: system-deps $(TEST_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/lint-imports --no-cache
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

setup: system-deps $(APP_STAMP)
setup-test: system-deps $(TEST_STAMP)

system-deps:
	@bash packaging/system-deps.sh

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(APP_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@$(BIN)/python -m compileall -q workbench plugins >/dev/null  # as a wheel install would
	@touch $@

$(TEST_STAMP): pyproject.toml plugins/example_price_list/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test,validation]"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e plugins/example_price_list
	@$(BIN)/python -m compileall -q workbench plugins >/dev/null  # as a wheel install would
	@touch $@ $(APP_STAMP)

# A standalone Linux bundle (PyInstaller --onedir) in dist/, and its tarball.
bundle: system-deps $(TEST_STAMP)
	VENV=$(VENV) bash packaging/build.sh --tar

# Every speed figure the README quotes, as one JSON document (under five minutes).
bench: system-deps $(TEST_STAMP)
	$(BIN)/python tests/benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist .bench-venv *.egg-info .pytest_cache
