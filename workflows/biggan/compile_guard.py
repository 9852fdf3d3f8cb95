"""The compiled path proves itself on the first real batch, or the run trains eagerly.

A compiled GAN step can be silently wrong: graphs traced while D was frozen for the G
step reused once D is unfrozen, a backend that miscompiles, a cached kernel from a
corrupt cache. A D that stops learning still gives a deterministic digest, so nothing
downstream would notice. The guard runs the same D step, G step and D step again (the
`requires_grad` toggles of a real iteration) once eagerly and once compiled, on the
same batch and latents, without optimizer steps, and compares:

- the losses and the gradient norms of D and G, within `tolerance(precision)`;
- that every parameter the eager steps give a non-zero gradient gets one compiled too,
  in the D step after D was frozen and unfrozen included;
- that no D parameter gets a gradient while D is frozen.

Weights, buffers (BN statistics, spectral-norm u) and gradients are left as found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from workflows.biggan.losses import d_hinge, g_hinge

# (relative, absolute) tolerance of compiled vs eager losses and gradient norms. fp32:
# reassociated sums in fused kernels differ by ~1e-6 relative; bf16 keeps 8 bits of
# mantissa (~4e-3), and a fused kernel rounds at other places than eager does.
TOLERANCE = {torch.float32: (1e-3, 1e-5), torch.bfloat16: (5e-2, 1e-3), torch.float16: (2e-2, 1e-4)}


def tolerance(amp_dtype: torch.dtype | None) -> tuple[float, float]:
    return TOLERANCE.get(amp_dtype or torch.float32, TOLERANCE[torch.bfloat16])


def _grad_facts(named: list[tuple[str, torch.nn.Parameter]]) -> tuple[float, set[str], set[str]]:
    """(total gradient norm, names with a non-zero gradient, names with any gradient)."""
    with torch.no_grad():
        grads = [(n, p.grad) for n, p in named if p.grad is not None]
        if not grads:
            return 0.0, set(), set()
        norms = torch.stack([g.detach().float().norm() for _, g in grads]).tolist()
    total = float(sum(v * v for v in norms) ** 0.5)
    return total, {n for (n, _), v in zip(grads, norms) if v > 0}, {n for n, _ in grads}


def _steps(t: Any, g_fwd: Callable[..., Any], d_fwd: Callable[..., Any], x: torch.Tensor, y: torch.Tensor) -> dict:
    """One D step, the G step with D frozen, and a D step again: losses and gradient facts."""
    gen = torch.Generator(device=t.device).manual_seed(12345)
    z = torch.randn(x.shape[0], t.G.dim_z, generator=gen, device=t.device)
    yf = torch.randint(t.c["model.n_classes"], (x.shape[0],), generator=gen, device=t.device)
    g_named, d_named = list(t.G.named_parameters()), list(t.D.named_parameters())
    out: dict[str, Any] = {}

    def d_step(tag: str) -> None:
        t._mark_step()
        with t._autocast():
            with torch.no_grad():
                fake = g_fwd(z, yf)
            logits = d_fwd(torch.cat([x, fake.to(x.dtype)]), torch.cat([y, yf])).float()
        real_l, fake_l = d_hinge(logits[: x.shape[0]], logits[x.shape[0] :])
        loss = real_l + fake_l
        loss.backward()
        out[f"{tag} loss"] = float(loss.detach())
        out[f"{tag} gradient norm"], out[f"{tag} nonzero"], _ = _grad_facts(d_named)
        for m in (t.G, t.D):
            m.zero_grad(set_to_none=True)

    try:
        d_step("D step")
        t.D.requires_grad_(False)
        t._mark_step()
        with t._autocast():
            loss = g_hinge(d_fwd(g_fwd(z, yf), yf).float())
        loss.backward()
        out["G step loss"] = float(loss.detach())
        out["G step gradient norm"], out["G step nonzero"], _ = _grad_facts(g_named)
        out["frozen D with gradient"] = _grad_facts(d_named)[2]
        t.D.requires_grad_(True)
        for m in (t.G, t.D):
            m.zero_grad(set_to_none=True)
        d_step("D step after the G step")
    finally:
        t.D.requires_grad_(True)
    return out


def compare(eager: dict, compiled: dict, rtol: float, atol: float) -> str:
    """'passed', or the first disagreement in one line."""
    for key, want in eager.items():
        got = compiled[key]
        if key.endswith("nonzero"):
            missing = sorted(want - got)
            if missing:
                return (
                    f"{key.removesuffix(' nonzero')}: {len(missing)} parameter(s) got no gradient compiled "
                    f"but one eagerly (first: {missing[0]})"
                )
        elif key == "frozen D with gradient":
            if got:
                return f"G step: {len(got)} frozen D parameter(s) got a gradient compiled (first: {sorted(got)[0]})"
        elif not abs(got - want) <= atol + rtol * max(abs(got), abs(want)) or got != got:
            return f"{key} differs: compiled {got:.6g}, eager {want:.6g} (tolerance rtol {rtol:g} + atol {atol:g})"
    return "passed"


def run_guard(t: Any, g_fwd: Callable[..., Any], d_fwd: Callable[..., Any], x: torch.Tensor, y: torch.Tensor) -> str:
    """Compiled vs eager on batch (x, y): 'passed' or the reason; the trainer's state is unchanged."""
    saved = {id(b): b.clone() for m in (t.G, t.D) for b in m.buffers()}

    def restore() -> None:
        for m in (t.G, t.D):
            m.zero_grad(set_to_none=True)
            for b in m.buffers():
                b.copy_(saved[id(b)])

    try:
        eager = _steps(t, t.G, t.D, x, y)
        restore()
        compiled = _steps(t, g_fwd, d_fwd, x, y)
    except torch.OutOfMemoryError:
        raise
    except Exception as exc:  # a compiled graph that fails on real data is refused like a wrong one
        return f"compiled step raised {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    finally:
        restore()
    return compare(eager, compiled, *tolerance(t.amp_dtype))
