# The two commands of the README. Both install what is missing first (scripts/bootstrap.sh).
PYTHON ?= python3
CONFIG ?= nv_small
JOBS ?= 2
TRACES ?= ../shared/nvdla/traces

.PHONY: setup run test
setup:
	@bash scripts/bootstrap.sh

run: setup   ## generate the nv_small core, smoke-test it, run NVDLA's SDP traces on its RTL
	$(PYTHON) -m scripts.cli generate --config $(CONFIG) --out out/$(CONFIG) --lint
	$(PYTHON) -m scripts.cli smoke --config $(CONFIG) --out out/$(CONFIG)
	@if [ -d $(TRACES)/$(CONFIG) ]; then \
	  $(PYTHON) -m scripts.cli trace --engine rtl --config $(CONFIG) -j $(JOBS) \
	    $$(ls -d $(TRACES)/$(CONFIG)/sdp_[0-9]* | grep -v _ew_); \
	else echo "no NVDLA traces at $(TRACES)/$(CONFIG): trace run skipped"; fi

test: setup  ## the whole test suite, in parallel
	$(PYTHON) -m pytest -n $(JOBS) tests
