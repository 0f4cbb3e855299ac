"""Built-in, deterministic ONNX model builders (``zoo:NAME``) for tests and benchmarks.

Each builder uses ``onnx.helper`` only (no torch) and a fixed-seed numpy generator, so the
same name always yields byte-identical models whose graphs look like what exporters write:
Conv+BatchNormalization CNNs, BERT encoders with decomposed LayerNorm / Erf-GELU / run-time
masks / shape subgraphs, ViT and Swin-like transformers, an opset-9 model-zoo CNN.

- ``list_models()``: the available names.
- ``get_model(name)``: a cached ``ModelProto``; shared between callers, so **do not mutate
  it** (use ``build_model(name)`` for a private copy).
- ``resolve(spec)``: ``"zoo:NAME"``, a path to an ``.onnx`` file (read by the frontend's
  loader; external data is loaded from beside it) or a ``ModelProto``.
- ``sample_inputs(model, seed)``: seeded feeds for every graph input that is not an
  initializer. Floats ~ N(0, 1); int64 token ids in the range stored in
  ``model.metadata_props`` under ``autofusion.input_range.<input>`` (``"lo,hi"``, hi
  exclusive); inputs marked ``autofusion.input_kind.<input> = attention_mask`` (or named like
  one) get 0/1 with trailing padding zeros.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

from autofusion.errors import AutofusionError
from autofusion.zoo import cnn, transformer

_BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    "tiny_cnn": cnn.tiny_cnn,
    "tiny_bert": transformer.tiny_bert,
    "resnet50": cnn.resnet50,
    "bert_base": transformer.bert_base,
    "bert_large": transformer.bert_large,
    "swin_tiny": transformer.swin_tiny,
    "vit_tiny": transformer.vit_tiny,
    "inception": cnn.inception,
    "shufflenet": cnn.shufflenet,
    "mobilenet": cnn.mobilenet,
    "zoo_cnn_opset9": cnn.zoo_cnn_opset9,
    "squeezenet": cnn.squeezenet,
    "densenet121": cnn.densenet121,
    "efficientnet_b0": cnn.efficientnet_b0,
    "video_resnet": cnn.video_resnet,
}

ZOO_PREFIX = "zoo:"
RANGE_KEY = "autofusion.input_range."
KIND_KEY = "autofusion.input_kind."


def list_models() -> list[str]:
    """Names accepted by ``get_model`` / ``zoo:NAME``."""
    return list(_BUILDERS)


def _builder(name: str) -> Callable[[], onnx.ModelProto]:
    try:
        return _BUILDERS[name]
    except KeyError:
        raise AutofusionError(
            f"unknown zoo model {name!r}; available: {', '.join(list_models())}"
        ) from None


def describe(name: str) -> str:
    """The one-paragraph description of what a zoo model imitates."""
    return (_builder(name).__doc__ or "").strip()


def build_model(name: str) -> onnx.ModelProto:
    """A freshly built (uncached) model that the caller may modify."""
    return _builder(name)()


@functools.lru_cache(maxsize=None)  # noqa: UP033 - lru_cache is the documented contract
def _cached(name: str) -> onnx.ModelProto:
    return build_model(name)


def get_model(name: str) -> onnx.ModelProto:
    """The zoo model ``name``, built once per process and shared: callers must not mutate
    it (``build_model`` gives a private copy)."""
    _builder(name)
    return _cached(name)


def resolve(spec: str | os.PathLike[str] | onnx.ModelProto) -> onnx.ModelProto:
    """A model from ``"zoo:NAME"``, a path to an ``.onnx`` file, or a ``ModelProto``."""
    if isinstance(spec, onnx.ModelProto):
        return spec
    text = os.fspath(spec)
    if text.startswith(ZOO_PREFIX):
        return get_model(text[len(ZOO_PREFIX) :])
    if os.path.isdir(text):
        raise AutofusionError(f"{text}: is a directory, not an ONNX file")
    if not os.path.isfile(text):
        raise AutofusionError(f"{text}: no such file (expected an .onnx file or zoo:NAME)")
    return _read_file(text)


def _read_file(path: str) -> onnx.ModelProto:
    """Read through the frontend's loader (as ``autofusion-opt`` does: the same messages
    for corrupt files), then put the weights it cut out back into the proto, each moved
    once, so the peak is about one copy of the weights rather than onnx.load's two."""
    from autofusion.frontend.loader import load_path

    loaded, _ = load_path(path)
    model, raws = loaded.model, loaded.raws
    for i, raw in enumerate(raws):
        if raw is not None:
            model.graph.initializer[i].raw_data = raw
            raws[i] = None
    return model


def _metadata(model: onnx.ModelProto) -> Mapping[str, str]:
    return {p.key: p.value for p in model.metadata_props}


def _is_mask(name: str, meta: Mapping[str, str]) -> bool:
    kind = meta.get(KIND_KEY + name)
    return kind == "attention_mask" if kind is not None else "mask" in name.lower()


def sample_inputs(
    model: onnx.ModelProto,
    seed: int = 0,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, np.ndarray]:
    """Seeded feeds for every graph input that has no initializer (see the module doc).
    ``input_shapes`` gives some inputs' shapes; other symbolic or unknown dimensions are
    taken as 1."""
    rng = np.random.default_rng(seed)
    meta = _metadata(model)
    inits = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim
        )
        if input_shapes and vi.name in input_shapes:
            shape = tuple(int(d) for d in input_shapes[vi.name])
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[vi.name] = rng.random(shape) < 0.5
        elif _is_mask(vi.name, meta):
            feeds[vi.name] = _padding_mask(shape, rng).astype(dtype)
        else:
            lo, hi = (int(v) for v in meta.get(RANGE_KEY + vi.name, "0,2").split(","))
            feeds[vi.name] = rng.integers(lo, hi, size=shape).astype(dtype)
    return feeds


def _padding_mask(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """1 for real tokens, then at least one trailing 0 (padding) on each row of the last axis."""
    mask = np.ones(shape, np.int64)
    if not shape or shape[-1] < 2:
        return mask
    seq = shape[-1]
    rows = mask.reshape(-1, seq)
    for r in rows:
        r[int(rng.integers(seq // 2, seq)) :] = 0
    return rows.reshape(shape)
