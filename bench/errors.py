"""The one exception type users see: a message naming the problem and the fix."""


class AtlasError(Exception):
    """A problem the user can fix; the CLI prints it without a traceback and exits 2."""


class ConfigError(AtlasError):
    """A malformed or unknown environment, experiment or setting."""


class DiskFullError(AtlasError):
    """ENOSPC/EDQUOT: the message names the path and the space needed; the CLI exits
    with `bench.records.contract.EXIT_DISK_FULL`."""
