# The two commands of the README: `make demo` (set up + main job) and `make test` (set up + whole suite).
.PHONY: setup setup-ref setup-browser setup-java setup-bwrap demo test

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
	HF_HUB_OFFLINE=1 HF_EVALUATE_OFFLINE=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests
