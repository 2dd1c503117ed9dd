# The README's two commands: `make demo` and `make test`. Both set up .venv first if needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DATA   ?= $(or $(CRAG_DATA_DIR),../shared/data)
PAIRS  := artifacts/evaluator-data

.PHONY: setup test test-slow demo demo-kb dev serve evaluator-data evaluator bench-evaluator bench-load clean

setup: $(STAMP)

# torch first, from the CPU build on disk: letting pip resolve it pulls GBs of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -e ".[test]"
	rm -f $(VENV)/.installed-*
	touch $@

test: setup
	$(BIN)/python -m pytest

test-slow: setup
	$(BIN)/python -m pytest -m slow

$(PAIRS)/manifest.json: | setup
	$(BIN)/crag evaluator build-data --data-dir $(DATA) --out $(PAIRS)

evaluator-data: $(PAIRS)/manifest.json

# Reproduces the shipped evaluator (crag/evaluator_model/default) from ../shared/data:
# a full fine-tune of the first 3 layers of all-MiniLM-L6-v2, exported as int8 weights on top of it,
# reading 112 tokens at inference (same validation accuracy as 128, under 100 ms for 10 documents),
# then calibrated on its own scores.
evaluator: evaluator-data
	$(BIN)/crag evaluator train --data $(PAIRS) --layers 3 --use-title --title-dropout 0.2 --lr 1e-4 --epochs 3 --out artifacts/models/full-l3
	$(BIN)/crag evaluator export --model artifacts/models/full-l3 --out crag/evaluator_model/default --max-length 112
	$(BIN)/crag evaluator calibrate --pairs $(PAIRS)/validation-popqa.jsonl

bench-evaluator: evaluator-data
	$(BIN)/python benchmarks/evaluator_benchmark.py --json artifacts/bench/evaluator.json \
		--checkpoint "full fine-tune (float32)=artifacts/models/full-l3" \
		--checkpoint "T5-small from scratch=artifacts/models/t5-small-scratch"

DEMO_DB := .crag/demo-chroma
PORT    ?= 8000

# the demo knowledge base in an embedded Chroma folder (ingesting again adds nothing)
demo-kb: setup
	$(BIN)/crag ingest crag/demo/kb --chroma-dir $(DEMO_DB) --collection demo

demo: demo-kb
	@while IFS= read -r question; do \
		echo; echo "=== $$question"; \
		$(BIN)/crag ask "$$question" --chroma-dir $(DEMO_DB) --collection demo || exit 1; \
	done < crag/demo/questions.txt

# LangGraph Studio / Agent Server on the demo knowledge base (langgraph.json points at it)
dev: demo-kb
	LANGGRAPH_CLI_NO_ANALYTICS=1 $(BIN)/langgraph dev --port 2024 $(DEV_ARGS)

# the LangServe endpoint (http://127.0.0.1:$(PORT)/crag/playground/) on the demo knowledge base
serve: demo-kb
	$(BIN)/crag serve --port $(PORT) --chroma-dir $(DEMO_DB) --collection demo

# 200 requests, 32 at a time, against `crag serve` on the real default models
bench-load: setup
	$(BIN)/python benchmarks/load_benchmark.py --requests 200 --concurrency 32 --json artifacts/bench/load.json

clean:
	rm -rf artifacts .pytest_cache .crag .langgraph_api
