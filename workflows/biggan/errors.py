"""The workload's user-facing error: bad configuration or input, exit code 2.

The workload knows nothing of `bench`, so it has its own exception type; the CLI prints
the message without a traceback and exits 2, or the error's own `exit_code` (74 for a full
disk, sysexits EX_IOERR, so that a status line says "disk full", not "bad configuration").
"""


class WorkloadConfigError(Exception):
    """A bad experiment, override key or value, data path or checkpoint; the message names it."""

    exit_code = 2  # the CLI's exit status for this error (a subclass may say more: disk full)
