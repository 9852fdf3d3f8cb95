# Atlas: the two commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
EXTRAS := torch,train,slurm,openshift,github,dev
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup demo test bench-train clean help

help:
	@echo "make demo   - set up .venv and run the main job on the local environments"
	@echo "make test   - set up .venv and run the whole test suite"
	@echo "make bench-train ARGS='--experiment cifar' - training throughput benchmark (JSON)"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==25.3
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

demo: setup
	$(VENV)/bin/bench demo

# pytest exits 5 when it collected no test; that is not a failure of the suite.
test: setup
	$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

bench-train: setup
	$(PY) benchmarks/train_throughput.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache

# MOC / OpenShift path (see clusters/moc/README.md). podman-setup needs root.
.PHONY: podman-setup image moc-render
podman-setup:
	scripts/podman-setup.sh

image:
	scripts/podman-image.sh localhost/atlas-biggan:dev

moc-render:
	kubectl kustomize clusters/moc
