"""Experiment configuration: defaults, YAML presets, `--set` overrides, validation, hash.

Every setting has a dotted key (`model.ch`, `train.batch_size`, ...). A preset under
`experiments/NAME.yaml` is a nested mapping of some of these keys; `--set KEY=VALUE`
overrides one key, the value parsed as YAML (`--set train.max_seconds=null`). Unknown
keys, wrong types and impossible values are errors that name the key.

`config_sha256` identifies the *job*: it hashes every key except the runtime-only keys in
`RUNTIME_KEYS` (device, precision, workers, data paths, cadences, ...), which may differ
between two environments running the same job without changing what is trained.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from workflows.biggan.errors import WorkloadConfigError

EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"
RESOLUTIONS = (32, 64, 128)


@dataclass(frozen=True)
class Setting:
    default: Any
    kind: type  # int, float, bool or str
    help: str
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    check: Callable[[Any], str | None] | None = None  # returns a problem, or None


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be > 0"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "must be >= 0"


def _fraction(v: Any) -> str | None:
    return None if 0 <= v < 1 else "must be in [0, 1)"


SETTINGS: dict[str, Setting] = {
    # model
    "model.arch": Setting("biggan", str, "generator/discriminator family", choices=("biggan", "biggan-deep")),
    "model.resolution": Setting(32, int, "image side in pixels", choices=RESOLUTIONS),
    "model.n_classes": Setting(10, int, "number of classes", check=_positive),
    "model.g_ch": Setting(64, int, "G channel width multiplier (BigGAN G_ch)", check=_positive),
    "model.d_ch": Setting(64, int, "D channel width multiplier (BigGAN D_ch)", check=_positive),
    "model.dim_z": Setting(
        128, int, "latent size (with hier, rounded down to a multiple of G blocks + 1)", check=_positive
    ),
    "model.shared_dim": Setting(
        128, int, "size of the shared class embedding fed to every conditional BN", check=_positive
    ),
    "model.hier": Setting(True, bool, "hierarchical z: split z across the input layer and the G blocks (BigGAN only)"),
    "model.depth": Setting(2, int, "residual blocks per resolution stage (BigGAN-deep only)", check=_positive),
    "model.attention": Setting(
        0, int, "resolution of the self-attention block in G and D (0 = none)", check=_non_negative
    ),
    "model.init": Setting("N02", str, "weight init", choices=("N02", "ortho", "xavier")),
    "model.bn_eps": Setting(1e-5, float, "BatchNorm epsilon", check=_positive),
    "model.sn_eps": Setting(1e-6, float, "spectral-norm epsilon", check=_positive),
    # train
    "train.batch_size": Setting(50, int, "global batch per D/G step, split evenly over processes", check=_positive),
    "train.accumulate": Setting(1, int, "gradient accumulations per optimizer step", check=_positive),
    "train.d_steps": Setting(4, int, "D steps per G step", check=_positive),
    "train.g_lr": Setting(2e-4, float, "G Adam learning rate", check=_positive),
    "train.d_lr": Setting(2e-4, float, "D Adam learning rate", check=_positive),
    "train.beta1": Setting(0.0, float, "Adam beta1", check=_fraction),
    "train.beta2": Setting(0.999, float, "Adam beta2", check=_fraction),
    "train.adam_eps": Setting(1e-6, float, "Adam epsilon", check=_positive),
    "train.ortho_reg": Setting(0.0, float, "orthogonal regularisation strength for G (0 = off)", check=_non_negative),
    "train.ema": Setting(True, bool, "keep an exponential moving average of G (G_ema)"),
    "train.ema_decay": Setting(0.9999, float, "G_ema decay", check=_fraction),
    "train.ema_start": Setting(
        1000, int, "G iteration from which G_ema averages (before: copies G)", check=_non_negative
    ),
    "train.max_iters": Setting(1000, int, "stop after this many G iterations", check=_positive),
    "train.max_seconds": Setting(
        None,
        float,
        "stop (status max_seconds, resumable) after this many seconds of this process",
        nullable=True,
        check=_positive,
    ),
    "train.seed": Setting(0, int, "seed of every random number generator", check=_non_negative),
    "train.checkpoint_every": Setting(
        500, int, "save a checkpoint every N G iterations (0 = only at the end)", check=_non_negative
    ),
    "train.checkpoint_keep": Setting(3, int, "checkpoints kept on disk", check=_positive),
    "train.log_every": Setting(50, int, "write a `train` line every N G iterations", check=_positive),
    "train.sample_grid": Setting(True, bool, "write samples.png from fixed z with G_ema at the end"),
    "train.profile_iters": Setting(  # null: on where the run keeps enough timed lines (profile_window.window_fit)
        None,
        int,
        "G iterations profiled after warm-up into DIR/profile.json, marked and left out of images/s "
        "(null = auto: 5 where the run keeps enough timed lines for steady images/s, else skipped and said so; "
        "0 = off; N = N as asked)",
        nullable=True,
        check=_non_negative,
    ),
    # data
    "data.source": Setting(
        "synthetic", str, "where real images come from", choices=("synthetic", "imagefolder", "hdf5")
    ),
    "data.path": Setting(
        None, str, "image folder (one subfolder per class) or HDF5 file from prepare-data", nullable=True
    ),
    "data.synthetic_size": Setting(1024, int, "images in the synthetic data set", check=_positive),
    "data.workers": Setting(0, int, "DataLoader worker processes", check=_non_negative),
    "data.pin_memory": Setting(
        "auto", str, "pinned host memory (auto = on with CUDA)", choices=("auto", "true", "false")
    ),
    "data.prefetch_factor": Setting(2, int, "batches prefetched per worker (workers > 0)", check=_positive),
    # runtime
    "runtime.device": Setting("auto", str, "auto (CUDA when available), cpu or cuda", choices=("auto", "cpu", "cuda")),
    "runtime.precision": Setting(
        "auto", str, "auto (bf16 on CUDA, fp32 on CPU), fp32 or bf16", choices=("auto", "fp32", "bf16")
    ),
    "runtime.channels_last": Setting(
        "auto", str, "channels_last memory format (auto = on with CUDA)", choices=("auto", "true", "false")
    ),
    "runtime.fused_adam": Setting(
        "auto",
        str,
        "fused Adam: one kernel per optimizer step (auto = on, CPU and CUDA)",
        choices=("auto", "true", "false"),
    ),
    "runtime.compile": Setting(
        "auto",
        str,
        "torch.compile G and D (auto = on with CUDA); eager with a logged warning if it fails or if the "
        "compiled steps disagree with eager ones on the first batch",
        choices=("auto", "true", "false"),
    ),
    "runtime.compile_mode": Setting(
        "auto",
        str,
        "torch.compile mode (auto = reduce-overhead, i.e. CUDA graphs, for models under 30M parameters "
        "on CUDA without accumulation; bigger models max-autotune-no-cudagraphs for runs of 10,000+ "
        "iterations; else default)",
        choices=("auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
    ),
    "runtime.compile_backend": Setting("inductor", str, "torch.compile backend (inductor; aot_eager etc. to debug)"),
    "runtime.compile_cache_dir": Setting(
        None,
        str,
        "compiler cache folder kept across runs (null = .torch-compile-cache next to the run dir)",
        nullable=True,
    ),
    "runtime.threads": Setting(0, int, "CPU threads for PyTorch (0 = its default)", check=_non_negative),
    "runtime.deterministic": Setting(
        "auto",
        str,
        "deterministic algorithms (auto = on for CPU, where resume is bit-exact; off on CUDA)",
        choices=("auto", "true", "false"),
    ),
    "runtime.progress": Setting(
        "auto", str, "progress bar: auto (when stderr is a terminal), bar or lines", choices=("auto", "bar", "lines")
    ),
    # eval
    "eval.every": Setting(0, int, "IS/FID every N G iterations (0 = off)", check=_non_negative),
    "eval.at_end": Setting(False, bool, "IS/FID once at the end"),
    "eval.inception_weights": Setting(
        None, str, "local torchvision Inception-v3 state_dict file (never downloaded)", nullable=True
    ),
    "eval.num_samples": Setting(1000, int, "generated (and real) images per evaluation", check=_positive),
}

# Keys that may differ between environments running the same job: excluded from
# config_sha256. Everything else defines what is trained.
RUNTIME_KEYS: frozenset[str] = frozenset(
    {
        "runtime.device",
        "runtime.precision",
        "runtime.channels_last",
        "runtime.fused_adam",
        "runtime.compile",
        "runtime.compile_mode",
        "runtime.compile_backend",
        "runtime.compile_cache_dir",
        "runtime.deterministic",
        "runtime.threads",
        "runtime.progress",
        "data.path",
        "data.workers",
        "data.pin_memory",
        "data.prefetch_factor",
        "train.max_seconds",
        "train.checkpoint_every",
        "train.checkpoint_keep",
        "train.log_every",
        "train.sample_grid",
        "train.profile_iters",
        "eval.inception_weights",
    }
)


def known_experiments() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, SETTINGS, n=1, cutoff=0.5)
    if not close:  # a bare name like `ch` or `batch_size`: match on the last part
        tails = {k.split(".", 1)[1]: k for k in SETTINGS}
        hit = difflib.get_close_matches(key.split(".")[-1], tails, n=1, cutoff=0.6)
        close = [tails[hit[0]]] if hit else []
    return f" (did you mean {close[0]!r}?)" if close else " (known keys: python -m workflows.biggan --list-keys)"


def coerce(key: str, value: Any, origin: str) -> Any:
    """Check one value against its setting; return it in the setting's type."""
    if key not in SETTINGS:
        raise WorkloadConfigError(f"{origin}: unknown key {key!r}{_suggest(key)}")
    s = SETTINGS[key]
    if value is None:
        if s.nullable:
            return None
        raise WorkloadConfigError(f"{origin}: {key} may not be null")
    if s.kind is bool:
        if not isinstance(value, bool):
            raise WorkloadConfigError(f"{origin}: {key} must be true or false, got {value!r}")
    elif s.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise WorkloadConfigError(f"{origin}: {key} must be an integer, got {value!r}")
    elif s.kind is float:
        if isinstance(value, str):  # YAML 1.1 reads `1e-4` (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise WorkloadConfigError(f"{origin}: {key} must be a number, got {value!r}")
        value = float(value)
    elif s.kind is str:
        if isinstance(value, bool) and s.choices and {"true", "false"} <= set(s.choices):
            value = "true" if value else "false"
        if not isinstance(value, str):
            raise WorkloadConfigError(f"{origin}: {key} must be a string, got {value!r}")
    if s.choices is not None and value not in s.choices:
        raise WorkloadConfigError(
            f"{origin}: {key}={value!r} is not supported (choose one of: {', '.join(map(str, s.choices))})"
        )
    if s.check is not None and (problem := s.check(value)):
        raise WorkloadConfigError(f"{origin}: {key}={value!r} {problem}")
    return value


def _flatten(tree: Any, origin: str, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        raise WorkloadConfigError(f"{origin}: expected a mapping of settings, got {type(tree).__name__}")
    flat: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(_flatten(v, origin, key + "."))
        else:
            flat[key] = v
    return flat


def load_preset(name: str) -> dict[str, Any]:
    """Flat key -> value of one preset (a known name or a path to a YAML file)."""
    path = Path(name)
    if not (name.endswith((".yaml", ".yml")) and path.is_file()):
        path = EXPERIMENTS_DIR / f"{name}.yaml"
        if not path.is_file():
            raise WorkloadConfigError(
                f"unknown experiment {name!r} (known: {', '.join(known_experiments())}; or give a path to a .yaml file)"
            )
    try:
        tree = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise WorkloadConfigError(f"{path}: not valid YAML: {exc}") from exc
    return _flatten(tree, str(path))


def parse_override(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise WorkloadConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set train.batch_size=64")
    key, raw = item.split("=", 1)
    key = key.strip()
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    if isinstance(value, (dict, list)):
        value = raw
    return key, value


def resolve(experiment: str, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Defaults, then the preset, then each `--set`; validated. Returns the flat config."""
    flat = {k: s.default for k, s in SETTINGS.items()}
    for key, value in load_preset(experiment).items():
        flat[key] = coerce(key, value, f"experiment {experiment!r}")
    for item in overrides:
        key, value = parse_override(item)
        flat[key] = coerce(key, value, f"--set {item}")
    check_consistency(flat)
    return flat


def check_consistency(c: dict[str, Any]) -> None:
    """Rules that involve more than one key."""
    res, attn = c["model.resolution"], c["model.attention"]
    if attn and (attn not in _powers_of_two(res) or attn < 8):
        raise WorkloadConfigError(
            f"model.attention={attn} must be 0 or a power-of-two resolution in "
            f"[8, {res}] inside the models (model.resolution={res})"
        )
    if c["data.source"] != "synthetic" and not c["data.path"]:
        raise WorkloadConfigError(
            f"data.source={c['data.source']} needs data.path (an image folder or an HDF5 file "
            f"made by `python -m workflows.biggan prepare-data`)"
        )
    if c["model.arch"] == "biggan" and c["model.hier"] and c["model.dim_z"] < 8:
        raise WorkloadConfigError("model.dim_z must be >= 8 with model.hier=true")


def _powers_of_two(res: int) -> list[int]:
    out, r = [], 4
    while r <= res:
        out.append(r)
        r *= 2
    return out


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    """The flat config as nested sections, as written to run_start."""
    tree: dict[str, Any] = {}
    for key in sorted(flat):
        section, name = key.split(".", 1)
        tree.setdefault(section, {})[name] = flat[key]
    return tree


def config_sha256(flat: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the job-defining keys (see RUNTIME_KEYS)."""
    job = {k: v for k, v in sorted(flat.items()) if k not in RUNTIME_KEYS}
    blob = json.dumps(job, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def describe_keys(values: dict[str, Any] | None = None) -> str:
    """One line per key, for `--list-keys` and the README.

    With `values` (an experiment's resolved settings) each line shows that value, and the
    default beside it where the experiment changes it.
    """
    lines = []
    for key, s in SETTINGS.items():
        extra = f" {{{', '.join(map(str, s.choices))}}}" if s.choices else ""
        rt = " [runtime-only]" if key in RUNTIME_KEYS else ""
        value = values[key] if values is not None and key in values else s.default
        changed = f" (default {s.default!r})" if value != s.default else ""
        lines.append(f"{key} = {value!r}{changed}{extra}{rt}  -- {s.help}")
    return "\n".join(lines)
