# The BigGAN training image, built by OpenShift's BuildConfig (clusters/moc/) at the
# pushed commit, and by `make image` with podman for the local-podman environment.
#
# BASE_IMAGE must bring Python >= 3.11 (the project's numpy/pandas pins need it) and,
# for GPUs, a CUDA build of PyTorch. The default is the official PyTorch runtime image
# with CUDA 12.4: CUDA 12.x still builds for Volta (sm_70, the V100s of the 2020 study
# and of MOC's older nodes) as well as Ampere/Hopper (A100/H100); CUDA 13 drops Volta.
# Its torch is kept (pip never replaces it, see below) and recorded in run.json, so a
# comparison shows which torch each environment ran. Without a registry (the dev/CI
# machine) build on a local base instead: scripts/podman-base-image.sh + `make image`.
ARG BASE_IMAGE=docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
FROM ${BASE_IMAGE}

# Extra pip options for the build only, e.g. "--find-links /opt/wheels" to take the
# CPU torch wheel from a folder mounted into the build (podman build -v ...).
ARG PIP_EXTRA_ARGS=""

# OpenShift runs the container as an arbitrary UID with GID 0 and no passwd entry:
# everything the job writes is owned by group 0 and group-writable, and every tool that
# would look up the home directory (PyTorch, matplotlib, pip) is told where it is.
ENV APP_ROOT=/opt/atlas \
    HOME=/home/atlas \
    USER=atlas \
    TORCH_HOME=/home/atlas/.cache/torch \
    XDG_CACHE_HOME=/home/atlas/.cache \
    MPLCONFIGDIR=/home/atlas/.cache/matplotlib \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ATLAS_RUN_DIR=/results/run \
    ATLAS_ENV=moc \
    ATLAS_EXPERIMENT=smoke
ENV PATH=${APP_ROOT}/venv/bin:${PATH}

WORKDIR ${APP_ROOT}
# Dependencies first (this layer is reused while only code changes) ...
# Empty package folders (and README, which pyproject names) stand in for the code so
# the editable install resolves; editing them then does not reinstall dependencies.
COPY pyproject.toml ./
RUN mkdir -p bench workflows && touch README.md bench/__init__.py workflows/__init__.py
# A venv that sees the base image's site-packages: the base's CUDA torch stays as it
# is, and torch from the `torch` extra is installed only where the base has none.
RUN python3 -m venv --system-site-packages ${APP_ROOT}/venv \
 && python -m pip install ${PIP_EXTRA_ARGS} -e ".[train]" \
 && if python -c "import torch" 2>/dev/null; then \
        echo "keeping the base image's torch $(python -c 'import torch; print(torch.__version__)')"; \
    else \
        python -m pip install ${PIP_EXTRA_ARGS} -e ".[train,torch]"; \
    fi

# ... then the code, copied in at build time (no git clone when the job starts).
COPY README.md ./
COPY bench bench
COPY workflows workflows
COPY clusters clusters

# Group 0 owns and may write what the job touches at run time (the venv stays
# read-only: nothing writes there, and a recursive chmod would copy it into a new layer).
RUN mkdir -p ${HOME}/.cache/torch ${HOME}/.cache/matplotlib /results /data \
 && chgrp -R 0 ${HOME} /results /data ${APP_ROOT}/bench ${APP_ROOT}/workflows ${APP_ROOT}/clusters \
 && chmod -R g=u ${HOME} /results /data ${APP_ROOT}/bench ${APP_ROOT}/workflows ${APP_ROOT}/clusters \
 && chgrp 0 ${APP_ROOT} && chmod g=u ${APP_ROOT}

# The commit the image was built from, for run.json (images have no .git). OpenShift's
# Docker builds also set OPENSHIFT_BUILD_COMMIT; bench's Job sets ATLAS_GIT_SHA itself.
ARG ATLAS_GIT_SHA=""
ARG ATLAS_GIT_DIRTY=0
ENV ATLAS_GIT_SHA=${ATLAS_GIT_SHA} \
    ATLAS_GIT_DIRTY=${ATLAS_GIT_DIRTY}

# Any numeric non-root UID works; OpenShift replaces it with one from the namespace range.
USER 1001

# The job, under the recorder: run.json + samples + the workload's train.jsonl all land
# in ATLAS_RUN_DIR. Arguments given to the container (`args:` in the Job) are passed to
# the workload, e.g. `--set train.max_iters=100`.
ENTRYPOINT ["/bin/sh", "-c", "exec python -m bench record --run-dir \"$ATLAS_RUN_DIR\" --env \"$ATLAS_ENV\" -- python -m workflows.biggan --experiment \"$ATLAS_EXPERIMENT\" --run-dir \"$ATLAS_RUN_DIR\" \"$@\"", "atlas-job"]
CMD []
