"""IS/FID never download: without local weights (or torchvision) they are skipped with a reason."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from workflows.biggan.config import resolve
from workflows.biggan.evaluate import EvalSkipped, _load_inception, frechet_distance, inception_score


def test_skipped_without_weights() -> None:
    with pytest.raises(EvalSkipped, match="set eval.inception_weights=PATH"):
        _load_inception(resolve("smoke")["eval.inception_weights"])
    with pytest.raises(EvalSkipped, match="does not exist"):
        _load_inception("/nonexistent/inception.pt")


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed here")
def test_skipped_without_torchvision(tmp_path: Path) -> None:
    weights = tmp_path / "inception.pt"
    weights.write_bytes(b"weights")
    with pytest.raises(EvalSkipped, match="torchvision is not installed"):
        _load_inception(str(weights))


def test_metric_formulas() -> None:
    probs = np.eye(5).repeat(4, axis=0)  # confident and evenly spread over 5 classes
    assert inception_score(probs, splits=1) == pytest.approx(5.0, rel=1e-6)
    assert inception_score(np.full((20, 5), 0.2), splits=2) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(200, 8))
    assert abs(frechet_distance(feats, feats)) < 1e-6
    assert frechet_distance(feats, feats + 3.0) == pytest.approx(8 * 9.0, rel=1e-6)
