"""BigGAN / BigGAN-deep training workload: `python -m workflows.biggan --help`."""
