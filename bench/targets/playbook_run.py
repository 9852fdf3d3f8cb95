"""One ansible-runner playbook run that dies with `bench` and leaves no private folder behind.

ansible-runner needs a private data folder (extravars, artifacts) and starts
`ansible-playbook` in a pty session with SIGHUP ignored, so a killed `bench collect` used to
leave the playbook running for minutes and its folder in /tmp for ever. Here:

- the playbook runs through `bench.parent_death` (ansible-runner's `binary`), so a killed
  `bench` takes the playbook and everything it started along (SIGTERM, then SIGKILL);
- the private folder `atlas-ansible-*` holds an `owner.lock` that its `bench` keeps locked
  (`flock`) while it lives; the kernel drops that lock when the process dies, however it
  dies, so every playbook run first removes the folders whose owner is gone.

Ansible keeps temporary files in `~/.ansible/tmp` (or ANSIBLE_LOCAL_TEMP): where that
is not writable (a read-only HOME), one line says so and how to fix it before anything runs.

Timeouts of the Slurm commands the playbooks run (`squeue`, `sacct`) come from
`ATLAS_SLURM_TIMEOUT_S` (`command_timeout_s`), handed to the playbooks as the extra
variable `atlas_slurm_timeout_s`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.errors import AtlasError, ConfigError
from bench.parent_death import guard_env

PRIVATE_PREFIX = "atlas-ansible-"
OWNER_LOCK = "owner.lock"
UNLOCKED_GRACE_S = 86400.0  # no lock file: a bench starting up, or an older bench still at work


def command_timeout_s(name: str, default: float) -> float:
    """A timeout in seconds from the environment variable `name` (positive number), else `default`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise ConfigError(f"{name}={text!r} is not a timeout: set it to seconds between 1 and 86399, or unset it")
    return value


def _owner_gone(folder: Path) -> bool:
    lock = folder / OWNER_LOCK
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        try:
            return time.time() - folder.stat().st_mtime > UNLOCKED_GRACE_S
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its bench still holds it
    finally:
        os.close(fd)  # closing drops the lock taken just now
    return True


def sweep_private_dirs(root: Path | None = None) -> list[Path]:
    """Remove the private folders under `root` (the temp folder) whose bench is gone; return them."""
    root = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = [p for p in root.iterdir() if p.name.startswith(PRIVATE_PREFIX)]
    except OSError:
        return removed
    for folder in candidates:
        if folder.is_dir() and not folder.is_symlink() and folder.stat().st_uid == os.getuid() and _owner_gone(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def private_dir(root: Path | None = None) -> Iterator[Path]:
    """A fresh private data folder, locked by this process while the block runs, removed after."""
    sweep_private_dirs(root)
    folder = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX, dir=root))
    fd = os.open(folder / OWNER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


def check_ansible_temp(envvars: dict[str, str]) -> None:
    """Refuse, in one line, to start Ansible where it cannot keep its temporary files:
    `~/.ansible/tmp` under a read-only HOME gave Ansible's traceback and a hint about Slurm."""
    env = {**os.environ, **envvars}
    local = env.get("ANSIBLE_LOCAL_TEMP")
    home = env.get("HOME", "")
    folder = Path(os.path.expanduser(local) if local else Path(home or "/", ".ansible", "tmp"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".atlas-probe-")
        probe.close()
    except OSError as exc:
        if local:
            raise AtlasError(
                f"ANSIBLE_LOCAL_TEMP ({local}) is not writable ({exc.strerror}): set it to a writable folder"
            ) from None
        raise AtlasError(
            f"HOME ({home}) is not writable ({exc.strerror}), and Ansible keeps its temporary files in "
            f"{folder}: make HOME writable, or set ANSIBLE_LOCAL_TEMP to a writable folder "
            "(e.g. ANSIBLE_LOCAL_TEMP=$TMPDIR/ansible)"
        ) from None


def _guard_script(folder: Path) -> Path:
    """The executable ansible-runner starts (its `binary`): this Python running the guard."""
    script = folder / "ansible-playbook-guarded"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m bench.parent_death "$@"\n')
    script.chmod(0o700)
    return script


def run_playbook(
    project_dir: Path,
    playbook: str,
    inventory: str,
    envvars: dict[str, str],
    extravars_text: str,
    timeout_s: int,
    root: Path | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Run `playbook` of `project_dir` through ansible-runner; return its status and events."""
    import ansible_runner

    check_ansible_temp(envvars)
    playbook_bin = shutil.which("ansible-playbook", path=envvars.get("PATH")) or "ansible-playbook"
    with private_dir(root) as tmp:
        (tmp / "env").mkdir()
        (tmp / "env" / "extravars").write_text(extravars_text)
        result = ansible_runner.run(
            private_data_dir=str(tmp),
            project_dir=str(project_dir),
            binary=str(_guard_script(tmp)),
            cmdline=shlex.join([playbook_bin, str(Path(project_dir) / playbook)]),
            inventory=inventory,
            envvars={**envvars, **guard_env()},
            quiet=True,
            timeout=timeout_s,
        )
        return str(result.status), list(result.events)
