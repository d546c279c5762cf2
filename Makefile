# The two commands of the README. Both install what is missing first (scripts/bootstrap.sh).
PYTHON ?= python3
CONFIG ?= nv_small
JOBS ?= 2
TRACES ?= ../shared/nvdla/traces

.PHONY: setup run test test-slow
setup:
	@bash scripts/bootstrap.sh

run: setup   ## generate the nv_small core, smoke-test it, run NVDLA's SDP, conv, PDP and CDP traces on its RTL
	$(PYTHON) -m scripts.cli generate --config $(CONFIG) --out out/$(CONFIG) --lint
	$(PYTHON) -m scripts.cli smoke --config $(CONFIG) --out out/$(CONFIG)
	@if [ -d $(TRACES)/$(CONFIG) ]; then \
	  $(PYTHON) -m scripts.cli trace --engine rtl --config $(CONFIG) -j $(JOBS) \
	    --reference $(TRACES)/$(CONFIG)_reference_cycles.tsv \
	    $$(ls -d $(TRACES)/$(CONFIG)/sdp_[0-9]* $(TRACES)/$(CONFIG)/dc_* \
	      $(TRACES)/$(CONFIG)/pdp_* $(TRACES)/$(CONFIG)/cdp_* $(TRACES)/$(CONFIG)/sdp_pdp_* | grep -v _ew_); \
	else echo "no NVDLA traces at $(TRACES)/$(CONFIG): trace run skipped"; fi

test: setup  ## the test suite, in parallel (without the long suites marked slow)
	$(PYTHON) -m pytest -n $(JOBS) -m "not slow" --durations=30 tests

test-slow: setup  ## only the long simulation suites (hundreds of random programs per build)
	$(PYTHON) -m pytest -n $(JOBS) -m slow tests
