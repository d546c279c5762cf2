# The two commands of the README. Both install what is missing first (scripts/bootstrap.sh).
PYTHON ?= python3
CONFIG ?= nv_small
JOBS ?= 2

.PHONY: setup run test
setup:
	@bash scripts/bootstrap.sh

run: setup   ## generate the nv_small core and run a register-level smoke test on it
	$(PYTHON) -m scripts.cli generate --config $(CONFIG) --out out/$(CONFIG) --lint
	$(PYTHON) -m scripts.cli smoke --config $(CONFIG) --out out/$(CONFIG)

test: setup  ## the whole test suite, in parallel
	$(PYTHON) -m pytest -n $(JOBS) tb
