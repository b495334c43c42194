# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# End to end on a small default program: collect graphs + configs, validate, summarise.
demo: $(STAMP)
	rm -rf demo-data
	$(BIN)/tgt programs
	$(BIN)/tgt collect --program resnet18 --preset tiny --batch 1 --configs 12 --seed 0 --out demo-data
	$(BIN)/tgt validate demo-data

test: $(STAMP)
	$(BIN)/ruff check tpugraphs_tools tests bench
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check tpugraphs_tools tests bench

bench: $(STAMP)
	$(BIN)/python bench/bench_featurize.py

clean:
	rm -rf $(VENV) demo-data .pytest_cache
