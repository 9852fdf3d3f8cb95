"""bench/cli.py: the commands in workflow order, and one clear line for a user error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.cli import COMMAND_ORDER, main, module_name

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_every_command_in_workflow_order():
    p = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    listed = re.findall(r"^    ([\w-]+)\s", p.stdout, flags=re.M)
    assert listed == [name.replace("_", "-") for name in COMMAND_ORDER]  # stage_data is `stage-data`
    assert COMMAND_ORDER.index("run") < COMMAND_ORDER.index("collect") < COMMAND_ORDER.index("report")
    assert COMMAND_ORDER.index("report") < COMMAND_ORDER.index("publish")
    assert (ROOT / "bench" / "commands").is_dir() and all(
        (ROOT / "bench" / "commands" / f"{module_name(name).rsplit('.', 1)[1]}.py").is_file() for name in COMMAND_ORDER
    )


def test_a_user_error_is_one_line_and_exit_2(capsys):
    assert main(["status", "--env", "no-such-env"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("bench status: error: unknown environment 'no-such-env'")


def test_a_closed_pipe_is_exit_141_without_a_traceback() -> None:
    """`bench ... | head`: a reader that goes away ends bench quietly, as it ends any shell tool."""
    proc = subprocess.Popen([sys.executable, "-m", "bench", "envs"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before bench writes a line: its first write meets a closed pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141 and err == "", err
