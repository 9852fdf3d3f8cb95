# Atlas: the two commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
EXTRAS := torch,train,slurm,openshift,github,dev
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup demo test bench-train bench-gpu clean help slurm-up slurm-down

help:
	@echo "make demo   - set up .venv and run the main job on the local environments"
	@echo "make test   - set up .venv and run the whole test suite"
	@echo "make bench-train ARGS='--experiment cifar' - training throughput benchmark (JSON)"
	@echo "make bench-gpu [ARGS='--presets cifar --startup'] - GPU matrix: presets x variants, JSON lines + Markdown table"
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
# built, the demo rebuilds it at the current commit, which takes seconds).
demo: setup
	@if [ "$$(id -u)" = 0 ]; then scripts/local-slurm.sh up || echo "make demo: the local Slurm did not start (above); local-slurm will be skipped"; \
	else echo "make demo: not root, so no local Slurm; local-slurm will be skipped"; fi
	@if command -v podman >/dev/null 2>&1 && podman image exists localhost/atlas-biggan:dev; then \
	  echo "make demo: rebuilding the training image at this commit (only the code layer changes)"; \
	  scripts/podman-image.sh localhost/atlas-biggan:dev >/dev/null || echo "make demo: image rebuild failed; local-podman runs the old image"; fi
	$(VENV)/bin/bench demo

# The Slurm tests start their own cluster; the podman tests need podman set up (root).
# Where that cannot be done they are skipped with the reason, never faked.
# pytest exits 5 when it collected no test; that is not a failure of the suite.
test: setup
	@if [ "$$(id -u)" = 0 ]; then scripts/podman-setup.sh || echo "make test: podman could not be set up (above); its tests will be skipped"; fi
	$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

bench-train: setup
	$(PY) benchmarks/train_throughput.py $(ARGS)

# Needs an NVIDIA GPU and a CUDA build of torch (without one it says so and exits 0).
# REF_DIR=<extracted ajbrock/BigGAN-PyTorch> ARGS='--ref-script PATH' adds the reference.
bench-gpu: setup
	$(PY) benchmarks/gpu_matrix.py $(ARGS)

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

# GitOps: steps the GitHub workflows run (see .github/workflows/README.md). Secrets come in
# through environment variables and are written to files only, never echoed.
.PHONY: lint-workflows lint-ansible ci-kubeconfig ci-ssh
KUBECONFIG_OUT ?= $(HOME)/.kube/config
SATORI_HOST    ?= satori-login-001.mit.edu

lint-workflows: setup
	$(VENV)/bin/actionlint

lint-ansible: setup
	$(VENV)/bin/ansible-lint --offline --nocolor ansible/

ci-kubeconfig:
	@test -n "$$OPENSHIFT_SERVER" || { echo "ci-kubeconfig: set OPENSHIFT_SERVER (https://api.<cluster>:6443)" >&2; exit 2; }
	@test -n "$$OPENSHIFT_TOKEN" || { echo "ci-kubeconfig: set OPENSHIFT_TOKEN (the CI ServiceAccount's token)" >&2; exit 2; }
	@mkdir -p "$(dir $(KUBECONFIG_OUT))"
	@umask 077; { printf '%s\n' 'apiVersion: v1' 'kind: Config' 'clusters:' '- name: moc' '  cluster:' \
	    "    server: \"$$OPENSHIFT_SERVER\""; \
	  if [ -n "$$OPENSHIFT_CA_DATA" ]; then printf '%s\n' "    certificate-authority-data: \"$$OPENSHIFT_CA_DATA\""; fi; \
	  printf '%s\n' 'users:' '- name: atlas-ci' '  user:' "    token: \"$$OPENSHIFT_TOKEN\"" 'contexts:' \
	    '- name: atlas-ci' '  context: {cluster: moc, user: atlas-ci}' 'current-context: atlas-ci'; \
	} > "$(KUBECONFIG_OUT)"
	@echo "ci-kubeconfig: wrote $(KUBECONFIG_OUT) (mode 600)"

ci-ssh:
	@test -n "$$SATORI_SSH_KEY" || { echo "ci-ssh: set SATORI_SSH_KEY (private key of the CI account)" >&2; exit 2; }
	@test -n "$$SATORI_KNOWN_HOSTS" || { echo "ci-ssh: set SATORI_KNOWN_HOSTS (the login node's pinned host key line)" >&2; exit 2; }
	@test -n "$$SATORI_USER" || { echo "ci-ssh: set SATORI_USER (the cluster account)" >&2; exit 2; }
	@umask 077; mkdir -p "$(HOME)/.ssh" && printf '%s\n' "$$SATORI_SSH_KEY" > "$(HOME)/.ssh/atlas_satori" && \
	  printf '%s\n' "$$SATORI_KNOWN_HOSTS" > "$(HOME)/.ssh/atlas_known_hosts" && \
	  if ! grep -qs '^# atlas ci-ssh' "$(HOME)/.ssh/config"; then printf '%s\n' '# atlas ci-ssh' \
	    "Host $(SATORI_HOST)" "  User $$SATORI_USER" "  IdentityFile $(HOME)/.ssh/atlas_satori" '  IdentitiesOnly yes' \
	    '  StrictHostKeyChecking yes' "  UserKnownHostsFile $(HOME)/.ssh/atlas_known_hosts" >> "$(HOME)/.ssh/config"; fi
	@echo "ci-ssh: key and pinned host key for $(SATORI_HOST) written under $(HOME)/.ssh"

# The local single-node Slurm behind env local-slurm (installs Debian's packages if
# missing; needs root). State, config and logs live in .slurm/.
slurm-up:
	scripts/local-slurm.sh up

slurm-down:
	scripts/local-slurm.sh down
