"""What runs inside the job: the recorder, its sampler and the probes it reads (NVML, cgroups, provenance)."""
