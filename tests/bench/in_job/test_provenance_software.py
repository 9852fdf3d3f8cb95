"""`software` facts of a run: the same torch/CUDA/cuDNN names whether read from torch's
version file (a CPU-only build, without importing torch) or from torch itself."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.bench.records.test_concurrent_collect import REPO

PROBE = """
import json, sys
from bench.in_job.provenance import software
without = software()
imported = "torch" in sys.modules
import torch
print(json.dumps({"without": without, "imported": imported, "with": software()}))
"""


def test_software_names_torch_as_torch_itself_does_and_imports_it_only_where_needed() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    import torch

    assert seen["without"] == seen["with"]
    assert seen["with"]["torch"] == torch.__version__ and seen["with"]["cuda"] == torch.version.cuda
    cpu_only = torch.version.cuda is None and torch.version.hip is None
    assert seen["imported"] is not cpu_only  # a CPU-only build is named from its version file
