# The commands of the README: `make demo` (set up + main job), `make test` (set up + whole suite, what CI runs) and
# `make test-fast` (the import contracts + every test not marked slow, browser or refvenv; tests/README.md, "Tiers").
.PHONY: setup setup-ref setup-browser setup-java setup-bwrap demo test test-fast

PYTEST = HF_HUB_OFFLINE=1 HF_EVALUATE_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider
# Every run's log ends with the 25 slowest phases and each file's total (tests/conftest.py, pytest_terminal_summary).
TIMES = --durations=25
FAST = not slow and not browser and not refvenv

setup:
	bash scripts/setup.sh

setup-ref:
	bash scripts/setup_ref.sh

setup-browser:
	bash scripts/setup_browser.sh

setup-java:
	bash scripts/setup_java.sh

setup-bwrap:
	bash scripts/setup_bwrap.sh

demo: setup
	bash scripts/demo.sh $(if $(PORT),--port $(PORT),)

test: setup setup-ref setup-browser setup-java setup-bwrap
	.venv/bin/lint-imports --no-cache
	$(PYTEST) $(TIMES) tests

test-fast: setup
	.venv/bin/lint-imports --no-cache
	$(PYTEST) $(TIMES) -m "$(FAST)" tests
