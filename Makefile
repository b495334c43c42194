# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Any supported Python works (3.11-3.13: PYTHON=python3.12); CONSTRAINTS=file pins versions
# (.ci/run tests the lowest supported jax that way, docs/versions.md).
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONSTRAINTS ?=
PIN    := $(if $(CONSTRAINTS),-c $(CONSTRAINTS),)

.PHONY: demo test lint bench clean venv

# keras-hub in the range tgt pins (programs/catalog KERAS_HUB), installed without its tensorflow
# requirements (dev lists the light ones): docs/programs.md, "Catalog programs".
export KERAS_HUB_SPEC = from tpugraphs_tools.programs.catalog import KERAS_HUB; print(KERAS_HUB)

venv: $(STAMP)

$(STAMP): pyproject.toml tpugraphs_tools/__init__.py $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' $(PIN)
	$(BIN)/pip install --quiet --no-deps "$$($(BIN)/python -c "$$KERAS_HUB_SPEC")" $(PIN)
	touch $(STAMP)

# End to end on a small default program: collect graphs + configs, validate, then the next
# three commands to run (tests/cli/test_demo.py runs each one's option parsing).
demo: $(STAMP)
	rm -rf demo-data demo-report
	$(BIN)/tgt collect --program resnet18 --preset tiny --batch-size 1 --configs 12 --seed 0 --out demo-data
	$(BIN)/tgt validate demo-data
	@echo ""
	@echo "next, after 'source $(VENV)/bin/activate':"
	@echo "  tgt report demo-data --out demo-report   # the labels and their 95% CIs: open demo-report/index.html"
	@echo "  tgt programs                             # what else to collect: the zoo and the keras-hub catalog"
	@echo "  tgt collect --program examples/my_program.py:make_fn --preset tiny --configs 12 --out demo-data   # your own program, same dataset"

test: $(STAMP)
	$(BIN)/ruff check tpugraphs_tools tests bench
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check tpugraphs_tools tests bench
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/bench_featurize.py

clean:
	rm -rf $(VENV) .venv-ci-lowest .venv-ci-newest demo-data demo-report .pytest_cache .import_linter_cache
