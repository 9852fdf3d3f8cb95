# The training image for OpenShift. Filled in by the MOC issue; see clusters/moc/README.md.
ARG BASE_IMAGE=docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
FROM ${BASE_IMAGE}
