# Set-up and everyday commands. Every target creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NVCC ?= $(shell command -v nvcc 2>/dev/null)
CU_FILES := $(shell find packages -name '*.cu' 2>/dev/null)
DEMO_MESH := data/naca0012_tri.msh
DEMO_OUT := out/demo

.PHONY: demo test test-gpu lint docs cuda-check clean

$(STAMP): packages/meshorder/pyproject.toml packages/gpusolver/pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet -e packages/meshorder -e packages/gpusolver
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/meshorder info $(DEMO_MESH)
	$(BIN)/meshorder reorder $(DEMO_MESH) $(DEMO_OUT)/plan.npz --colour --hyperplanes
	$(BIN)/meshorder compare $(DEMO_MESH) --orderings native,random,rcm,metis,layers,hilbert
	$(BIN)/meshorder plot $(DEMO_MESH) $(DEMO_OUT)/plan.npz -o $(DEMO_OUT)/adjacency.png
	$(BIN)/gpusolver run cases/naca0012_demo.toml --quiet
	@echo "demo: plan in $(DEMO_OUT)/plan.npz, plot in $(DEMO_OUT)/adjacency.png, solver output in $(DEMO_OUT)/solver"

test: $(STAMP) cuda-check
	$(BIN)/python -m pytest -q -n 2 --doctest-modules tests packages/meshorder/src packages/gpusolver/src

test-gpu: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu tests

docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check packages tests

cuda-check:
ifneq ($(strip $(NVCC)),)
ifneq ($(strip $(CU_FILES)),)
	@for f in $(CU_FILES); do echo "nvcc -arch=sm_90 $$f"; \
	  $(NVCC) -arch=sm_90 -c $$f -o /dev/null || exit 1; done
endif
endif

clean:
	rm -rf $(VENV) out .pytest_cache docs/_build
