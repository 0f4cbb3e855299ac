"""The committed exports of ``data/exported`` (``manifest.json``) and seeded feeds for them, shared
by the run-time batch and the symbolic-import tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "exported"
MANIFEST = json.loads((DATA / "manifest.json").read_text())


def feeds(name: str, batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    """Inputs of export ``name`` at (``batch``, ``seq``): token ids in the manifest's range,
    an attention mask that attends to at least the first two positions, normal floats
    otherwise."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in MANIFEST[name]["inputs"]:
        sizes = {"batch": batch, "seq": seq}
        shape = [sizes[d] if isinstance(d, str) else d for d in spec["symbolic_shape"]]
        if "range" in spec:
            arr = rng.integers(*spec["range"], shape).astype(spec["dtype"])
            if spec["name"] == "attention_mask":
                arr[:, :2] = 1  # every sample attends to something
            out[spec["name"]] = arr
        else:
            out[spec["name"]] = rng.standard_normal(shape).astype(spec["dtype"])
    return out
