# Atlas: the two commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
EXTRAS := torch,train,slurm,openshift,github,dev
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup demo test test-fast chaos lint format bench-train bench-gpu gpu-proof clean help slurm-up slurm-down api-double

help:
	@echo "make demo   - set up .venv and run the main job on the local environments"
	@echo "make test   - set up .venv, lint (ruff) and run the whole test suite"
	@echo "make test-fast - lint and the tests not marked slow (the edit loop)"
	@echo "make chaos  - the chaos test at 60 trials (kills landed, resumes seen)"
	@echo "make lint / format - ruff check and format check / rewrite the tree with ruff format"
	@echo "make bench-train ARGS='--experiment cifar' - training throughput benchmark (JSON)"
	@echo "make bench-gpu [ARGS='--presets cifar --startup'] - GPU matrix: presets x variants, JSON lines + Markdown table"
	@echo "make gpu-proof [ARGS=--rehearse] - the 9-minute GPU proof with its evidence folder (benchmarks/README.md)"
	@echo "make api-double [ARGS='--empty'] - an OpenShift API server double on 127.0.0.1; prints a kubeconfig"
	@echo "                (ARGS='--kubelet . --kueue cpu-localqueue=cpu:1,memory:4Gi': pods run here, Kueue admits)"
	@echo "make slurm-up / slurm-down - start / stop the local single-node Slurm (env local-slurm; root)"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==25.3
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

# The demo's second local environment is a real single-node Slurm (local-slurm); it
# stays up afterwards (`make slurm-down` stops it). Without root it is skipped, with the
# reason, and so is local-podman until `make image` has built the training image (once
# built, the demo rebuilds it at the current commit, which takes seconds). The third,
# local-openshift, is the OpenShift API double with its kubelet and Kueue
# (scripts/api-double.sh; state in .api-double/, stopped after the demo): it builds and
# runs the checkout's last commit, as a cluster builds what was pushed.
demo: setup
	@if [ "$$(id -u)" = 0 ]; then scripts/local-slurm.sh up || echo "make demo: the local Slurm did not start (above); local-slurm will be skipped"; \
	else echo "make demo: not root, so no local Slurm; local-slurm will be skipped"; fi
	@if command -v podman >/dev/null 2>&1 && podman image exists localhost/atlas-biggan:dev; then \
	  echo "make demo: rebuilding the training image at this commit (only the code layer changes)"; \
	  scripts/podman-image.sh localhost/atlas-biggan:dev >/dev/null || echo "make demo: image rebuild failed; local-podman runs the old image"; fi
	@scripts/api-double.sh up || echo "make demo: the API double did not start (above); local-openshift will be skipped"
	@ATLAS_API_DOUBLE=$(CURDIR)/.api-double $(VENV)/bin/bench demo; rc=$$?; scripts/api-double.sh down; exit $$rc

# The Slurm tests start their own cluster; the podman tests need podman set up (root).
# Where that cannot be done they are skipped with the reason, never faked.
# pytest exits 5 when it collected no test; that is not a failure of the suite. It lists
# the 15 slowest tests at the end (--durations=15), to keep the suite fast.
# The tests run on PYTEST_WORKERS processes (pytest-xdist); tests sharing the local Slurm
# or podman stay on one worker each (tests/conftest.py). PYTEST_WORKERS=0: one process.
# Three on a 2-core machine: the Slurm and chaos tests spend about half their time waiting
# on the scheduler or a killed job (their own and their children's CPU measured against
# their wall time), and a third process keeps the cores busy meanwhile.
PYTEST_WORKERS ?= 3
PYTEST_RUN = $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15
NO_TESTS_IS_OK = rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc
test: setup lint lint-workflows
	@if [ "$$(id -u)" = 0 ]; then scripts/podman-setup.sh || echo "make test: podman could not be set up (above); its tests will be skipped"; fi
	$(PYTEST_RUN) $(PYTEST_ARGS); $(NO_TESTS_IS_OK)

# The edit loop: everything not marked `slow` (the Slurm, podman, chaos and end-to-end
# tests are), after ruff. `make test` (and CI) still runs all of it.
test-fast: setup lint
	$(PYTEST_RUN) -m "not slow" $(PYTEST_ARGS); $(NO_TESTS_IS_OK)

# The chaos test at full size (make test runs its default 10 trials): 60 seeded kills of the
# workload, the recorder, collect and report; the closing line counts trials, kills landed, resumes.
CHAOS_TRIALS ?= 60
chaos: setup
	@mkdir -p .atlas && rm -f .atlas/chaos.jsonl
	ATLAS_CHAOS_TRIALS=$(CHAOS_TRIALS) ATLAS_CHAOS_LOG=$(CURDIR)/.atlas/chaos.jsonl $(PY) -m pytest -q tests/chaos -k random_kill; \
	  rc=$$?; $(PY) -m tests.chaos.summary .atlas/chaos.jsonl; exit $$rc

# ruff (settings in pyproject.toml): lint and format check, zero findings.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench-train: setup
	$(PY) benchmarks/train_throughput.py $(ARGS)

# Needs an NVIDIA GPU and a CUDA build of torch (without one it says so and exits 0).
# REF_DIR=<extracted ajbrock/BigGAN-PyTorch> ARGS='--ref-script PATH' adds the reference.
bench-gpu: setup
	$(PY) benchmarks/gpu_matrix.py $(ARGS)

# The GPU proof (benchmarks/README.md): on a GPU machine whose python3 has CUDA torch and
# Atlas installed with --no-deps, without a .venv: REF_DIR=<reference> make gpu-proof.
# Here (.venv present) ARGS=--rehearse runs it on the CPU with the NVML double.
PROOF_PY := $(if $(wildcard $(PY)),$(PY),$(PYTHON))
gpu-proof:
	$(PROOF_PY) benchmarks/gpu_proof.py $(ARGS)

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

# A test double of the OpenShift API server for kubectl and `bench --env moc` by hand
# (clusters/moc/README.md): prints a kubeconfig, serves until Ctrl-C.
api-double: setup
	$(PY) -m tests.doubles.apiserver $(ARGS)

# GitOps: steps the GitHub workflows run (see .github/workflows/README.md). Secrets come in
# through environment variables and are written to files only, never echoed. Nothing here
# names an environment: CI's jobs come from `bench envs` (ci-matrix), a Slurm login host
# from the environment's inventory (ci-ssh ENV=NAME).
.PHONY: lint-workflows lint-ansible ci-matrix ci-dispatch-check ci-setup ci-kubeconfig ci-ssh ci-clean
# In CI (RUNNER_TEMP set) credentials go under the job's temporary folder, removed by
# `make ci-clean` in an always() step; on a workstation, where you would keep them.
CI_CREDENTIALS := $(if $(RUNNER_TEMP),$(RUNNER_TEMP)/atlas-ci)
KUBECONFIG_OUT ?= $(if $(CI_CREDENTIALS),$(CI_CREDENTIALS)/kubeconfig,$(HOME)/.kube/config)
SSH_DIR ?= $(if $(CI_CREDENTIALS),$(CI_CREDENTIALS)/ssh,$(HOME)/.ssh)

# actionlint, and zizmor offline: no finding of medium or high severity (accepted ones are
# marked in the workflow with a reason and listed in .github/workflows/README.md).
lint-workflows: setup
	$(VENV)/bin/actionlint
	$(VENV)/bin/zizmor --offline --min-severity medium .github/workflows

lint-ansible: setup
	$(VENV)/bin/ansible-lint --offline --nocolor ansible/

# The deploy/collect matrix: remote environments named in DEPLOY_ENVS (a repository
# variable: space-separated names; empty = none), as JSON in $GITHUB_OUTPUT's `matrix`.
ci-matrix:
	@test -n "$$GITHUB_OUTPUT" || { echo "ci-matrix: GITHUB_OUTPUT is not set (GitHub Actions sets it)" >&2; exit 2; }
	@matrix=$$($(VENV)/bin/bench envs --json --remote --only "$$DEPLOY_ENVS") && \
	  echo "matrix=$$matrix" >> "$$GITHUB_OUTPUT" && echo "ci-matrix: $$matrix"

# workflow_dispatch: deploy only a commit on the default branch or the head of an open PR
# (SHA; GITHUB_REPOSITORY, DEFAULT_BRANCH, GITHUB_TOKEN, GITHUB_API_URL from Actions).
ci-dispatch-check:
	@test -n "$$SHA" || { echo "ci-dispatch-check: set SHA (the commit to deploy)" >&2; exit 2; }
	$(VENV)/bin/python -m bench.gitops.dispatch "$$SHA"

# The credentials step of ENV's kind (`bench envs` field ci_setup: ci-kubeconfig, ci-ssh or none).
ci-setup:
	@test -n "$(ENV)" || { echo "ci-setup: name the environment: make ci-setup ENV=<env>" >&2; exit 2; }
	@step=$$($(VENV)/bin/bench envs --only "$(ENV)" --field ci_setup $(if $(CLUSTERS),--clusters "$(CLUSTERS)")) || exit 2; \
	if [ -n "$$step" ]; then $(MAKE) --no-print-directory "$$step" ENV="$(ENV)"; else echo "ci-setup: $(ENV) needs no credentials"; fi

ci-kubeconfig:
	@test -n "$$OPENSHIFT_SERVER" || { echo "ci-kubeconfig: set OPENSHIFT_SERVER (https://api.<cluster>:6443)" >&2; exit 2; }
	@test -n "$$OPENSHIFT_TOKEN" || { echo "ci-kubeconfig: set OPENSHIFT_TOKEN (the CI ServiceAccount's token)" >&2; exit 2; }
	@$(VENV)/bin/python -m bench.gitops.ci_values kubeconfig  # no newline or quote reaches the file
	@mkdir -p "$(dir $(KUBECONFIG_OUT))"
	@umask 077; { printf '%s\n' 'apiVersion: v1' 'kind: Config' 'clusters:' '- name: cluster' '  cluster:' \
	    "    server: \"$$OPENSHIFT_SERVER\""; \
	  if [ -n "$$OPENSHIFT_CA_DATA" ]; then printf '%s\n' "    certificate-authority-data: \"$$OPENSHIFT_CA_DATA\""; fi; \
	  printf '%s\n' 'users:' '- name: atlas-ci' '  user:' "    token: \"$$OPENSHIFT_TOKEN\"" 'contexts:' \
	    '- name: atlas-ci' '  context: {cluster: cluster, user: atlas-ci}' 'current-context: atlas-ci'; \
	} > "$(KUBECONFIG_OUT)"
	@if [ -n "$$GITHUB_ENV" ]; then echo "KUBECONFIG=$(KUBECONFIG_OUT)" >> "$$GITHUB_ENV"; fi
	@echo "ci-kubeconfig: wrote $(KUBECONFIG_OUT) (mode 600)"

# SSH to a Slurm environment's login host (read from clusters/$(ENV)/inventory.yml). Without
# SSH_KEY the runner's own SSH set-up is used (a self-hosted runner at the cluster).
ci-ssh:
	@test -n "$(ENV)" || { echo "ci-ssh: name the environment: make ci-ssh ENV=<env>" >&2; exit 2; }
	@if [ -z "$$SSH_KEY" ]; then echo "ci-ssh: SSH_KEY not set: using this runner's own SSH set-up for $(ENV)"; exit 0; fi; \
	test -n "$$SSH_KNOWN_HOSTS" || { echo "ci-ssh: set SSH_KNOWN_HOSTS (the login node's pinned host key line)" >&2; exit 2; }; \
	test -n "$$SSH_USER" || { echo "ci-ssh: set SSH_USER (the cluster account)" >&2; exit 2; }; \
	host=$$($(VENV)/bin/bench envs --host "$(ENV)" $(if $(CLUSTERS),--clusters "$(CLUSTERS)")) || exit 2; \
	$(VENV)/bin/python -m bench.gitops.ci_values ssh "$$host" || exit 2; \
	umask 077; mkdir -p "$(SSH_DIR)" && printf '%s\n' "$$SSH_KEY" > "$(SSH_DIR)/atlas_$(ENV)" && \
	  printf '%s\n' "$$SSH_KNOWN_HOSTS" > "$(SSH_DIR)/atlas_known_hosts_$(ENV)" && \
	  if ! grep -qs "^# atlas ci-ssh $(ENV)$$" "$(SSH_DIR)/config"; then printf '%s\n' "# atlas ci-ssh $(ENV)" \
	    "Host $$host" "  User $$SSH_USER" "  IdentityFile $(SSH_DIR)/atlas_$(ENV)" '  IdentitiesOnly yes' \
	    '  StrictHostKeyChecking yes' "  UserKnownHostsFile $(SSH_DIR)/atlas_known_hosts_$(ENV)" >> "$(SSH_DIR)/config"; fi; \
	if [ -n "$$GITHUB_ENV" ] && [ "$(SSH_DIR)" != "$(HOME)/.ssh" ]; then \
	  echo "ANSIBLE_SSH_ARGS=-F $(SSH_DIR)/config -o ControlMaster=auto -o ControlPersist=60s" >> "$$GITHUB_ENV"; fi; \
	echo "ci-ssh: key and pinned host key for $$host ($(ENV)) written under $(SSH_DIR)"

# Remove what ci-kubeconfig / ci-ssh wrote under the job's temporary folder (CI's always() step).
ci-clean:
	@test -n "$(CI_CREDENTIALS)" || { echo "ci-clean: RUNNER_TEMP is not set (only CI writes credentials there)" >&2; exit 2; }
	rm -rf "$(CI_CREDENTIALS)"

# The local single-node Slurm behind env local-slurm (installs Debian's packages if
# missing; needs root). State, config and logs live in .slurm/.
slurm-up:
	scripts/local-slurm.sh up

slurm-down:
	scripts/local-slurm.sh down
