"""The workload's user-facing error: bad configuration or input, exit code 2.

The workload knows nothing of `bench`, so it has its own exception type; the CLI prints
the message without a traceback and exits 2 (see README: exit codes).
"""


class WorkloadConfigError(Exception):
    """A bad experiment, override key or value, data path or checkpoint; the message names it."""
