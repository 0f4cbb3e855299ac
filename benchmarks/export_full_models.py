"""Export issue 14's full-size models with the TorchScript exporter, as real exporters write them.

The zoo builders (``autofusion/zoo/``) imitate these graphs; this script writes the graphs
themselves, so ``autofusion-compile`` / ``autofusion-bench`` / ``benchmarks/run_zoo.py`` can
check that real exports take the same fast paths as the zoo models. The files are 10-450 MB
and are not committed; no test reads them. Needs the torch venv of
``benchmarks/export_torch_models.py`` plus torchvision and timm (no weights are downloaded;
random init, seeded):

    /work/torchvenv/bin/pip install torchvision timm
    HF_HUB_OFFLINE=1 /work/torchvenv/bin/python benchmarks/export_full_models.py \\
        --out /work/scratch/heldout [--models resnet50,bert_base]

Models (batch 1, TorchScript exporter ``dynamo=False``, opset 17, constant folding on, so
BatchNorm is folded into Conv): torchvision ``resnet50``, ``mobilenet_v2``, ``googlenet``
(aux heads off, ``transform_input=False``), ``squeezenet1_1``, ``densenet121``,
``efficientnet_b0``, ``swin_t``, all [1,3,224,224] -> logits [1,1000]; ``vit_tiny`` (timm
``vit_tiny_patch16_224``, or transformers ``ViTModel`` with the same config if timm is
missing); ``bert_base`` (transformers ``BertModel`` from ``BertConfig()``, seq 128, int64
``input_ids`` and ``attention_mask`` -> ``last_hidden_state``, ``pooler_output``; ``--seq N``
another length, written as ``NAME_sN.onnx``). Each file is ``NAME.onnx``, beside a
``manifest.json`` that names the zoo model it corresponds to.

``--exporter dynamo`` writes ``NAME_dynamo.onnx`` with ``torch.onnx.export(dynamo=True)``
(torch.export, then onnxscript at its default opset, 20 with torch 2.14), the exporter
torch uses by default since 2.9, with the weights beside it in ``NAME_dynamo.onnx.data``
as that exporter writes them: attention as ``Mul`` by the square root of the scale on
each side, ``K^T`` through a reshape-transpose-reshape, an ``IsNaN`` guard after the
softmax, ``Gelu`` and ``LayerNormalization`` as single ops, BatchNorm folded. ``--models
extra`` exports torchvision families beyond the nine (``EXTRA``: ResNet-18,
MobileNet-V3-Large, ShuffleNet-V2, RegNetY-400MF, EfficientNet-B1, ConvNeXt-Tiny,
Inception-v3 at 299 x 299, MnasNet-1.0), whose manifest entries name no zoo model;
``--models variants`` the nine families as timm and transformers build them (``VARIANTS``:
timm ResNet-50, MobileNet-V2, EfficientNet-B0, Inception-v3, DenseNet-121, Swin-Tiny,
DeiT-Small; transformers ViT-Base, Swin-Tiny and DistilBERT from their default configs).

Random init is made non-degenerate (outputs of ordinary size, no saturated softmax): zero
parameters get small seeded values, norm weights U(0.7, 1.3), BatchNorm statistics are
measured on a seeded batch, and the last layer is scaled so the output's standard deviation
is about 2. The BERT file carries ``autofusion.input_range.input_ids`` metadata so
``autofusion.zoo.sample_inputs`` draws ids from the vocabulary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from torch import nn


def _import_torchvision() -> Any:
    """torchvision, importable even where its C ops fail to load (NOTES.md: a CUDA
    torchvision beside CPU torch): declaring the two schemas its import needs is enough for
    the pure-Python model code."""
    try:
        import torchvision
    except (RuntimeError, OSError):
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor qdets, Tensor qscores, float iou_threshold) -> Tensor")
        globals()["_TV_LIB"] = lib  # keep the definitions alive
        import torchvision
    return torchvision


SEQ = 128
IMAGE = (1, 3, 224, 224)

# name -> (builder returning the model, zoo model it corresponds to)
Builder = Callable[[], nn.Module]


def _tv(name: str, **kw: Any) -> Builder:
    def build() -> nn.Module:
        return getattr(_import_torchvision().models, name)(weights=None, **kw)

    return build


def _vit() -> nn.Module:
    try:
        import timm
    except ImportError:
        from transformers import ViTConfig, ViTModel

        cfg = ViTConfig(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                        intermediate_size=768, image_size=224, patch_size=16)  # fmt: skip
        return _HFOut(ViTModel(cfg, add_pooling_layer=False), "last_hidden_state")
    return timm.create_model("vit_tiny_patch16_224", pretrained=False)


class _HFOut(nn.Module):
    """A transformers model called with positional tensors, returning plain tensors."""

    def __init__(self, model: nn.Module, *outs: str, keys: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.model, self.outs, self.keys = model, outs, keys

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        kw = dict(zip(self.keys, args)) if self.keys else {"pixel_values": args[0]}
        res = self.model(**kw, return_dict=True)
        return tuple(getattr(res, k) for k in self.outs)


def _bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return _HFOut(BertModel(BertConfig()), "last_hidden_state", "pooler_output",
                  keys=("input_ids", "attention_mask"))  # fmt: skip


MODELS: dict[str, tuple[Builder, str]] = {
    "resnet50": (_tv("resnet50"), "resnet50"),
    "mobilenet_v2": (_tv("mobilenet_v2"), "mobilenet"),
    "googlenet": (
        _tv("googlenet", aux_logits=False, transform_input=False, init_weights=True),
        "inception",
    ),
    "squeezenet1_1": (_tv("squeezenet1_1"), "squeezenet"),
    "densenet121": (_tv("densenet121"), "densenet121"),
    "efficientnet_b0": (_tv("efficientnet_b0"), "efficientnet_b0"),
    "swin_t": (_tv("swin_t"), "swin_tiny"),
    "vit_tiny": (_vit, "vit_tiny"),
    "bert_base": (_bert, "bert_base"),
}

# Beyond the nine (--models extra): torchvision families the zoo does not imitate, to
# see that the fast paths are general (SE blocks and hardswish, channel shuffle, 5x5
# depthwise, grouped convs, ConvNeXt's LayerNorm over channels, 299x299 Inception-v3).
EXTRA: dict[str, tuple[Builder, str]] = {
    "resnet18": (_tv("resnet18"), ""),
    "mobilenet_v3_large": (_tv("mobilenet_v3_large"), ""),
    "shufflenet_v2_x1_0": (_tv("shufflenet_v2_x1_0"), ""),
    "regnet_y_400mf": (_tv("regnet_y_400mf"), ""),
    "efficientnet_b1": (_tv("efficientnet_b1"), ""),
    "convnext_tiny": (_tv("convnext_tiny"), ""),
    "inception_v3": (_tv("inception_v3", aux_logits=False, init_weights=True), ""),
    "mnasnet1_0": (_tv("mnasnet1_0"), ""),
}


def _timm(name: str) -> Builder:
    def build() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False)

    return build


def _hf(kind: str) -> Builder:
    """A transformers model from its default config: ViT-Base, Swin-Tiny, DistilBERT."""

    def build() -> nn.Module:
        import transformers as tf

        if kind == "distilbert":
            model = tf.DistilBertModel(tf.DistilBertConfig())
            return _HFOut(model, "last_hidden_state", keys=("input_ids", "attention_mask"))
        if kind == "vit":
            return _HFOut(tf.ViTModel(tf.ViTConfig(), add_pooling_layer=False), "last_hidden_state")
        return _HFOut(tf.SwinModel(tf.SwinConfig()), "last_hidden_state")

    return build


# The nine families as other model sources write them (--models variants): timm's and
# transformers' graphs for the same architectures (other stems, attention forms, LayerNorm
# and GELU spellings), to see that a user's own export takes the same paths. The zoo model
# named is the one the family corresponds to.
VARIANTS: dict[str, tuple[Builder, str]] = {
    "timm_resnet50": (_timm("resnet50"), "resnet50"),
    "timm_mobilenetv2_100": (_timm("mobilenetv2_100"), "mobilenet"),
    "timm_efficientnet_b0": (_timm("efficientnet_b0"), "efficientnet_b0"),
    "timm_inception_v3": (_timm("inception_v3"), ""),
    "timm_densenet121": (_timm("densenet121"), "densenet121"),
    "timm_swin_tiny": (_timm("swin_tiny_patch4_window7_224"), "swin_tiny"),
    "timm_deit_small": (_timm("deit_small_patch16_224"), ""),
    "hf_vit_base": (_hf("vit"), ""),
    "hf_swin_tiny": (_hf("swin"), "swin_tiny"),
    "hf_distilbert": (_hf("distilbert"), ""),
}
SETS = {"extra": EXTRA, "variants": VARIANTS}


TEXT = ("bert_base", "hf_distilbert")


def _inputs(name: str, seq: int = SEQ) -> tuple[tuple[torch.Tensor, ...], list[str], list[str]]:
    if name in TEXT:
        ids = torch.randint(0, 30522, (1, seq), generator=torch.Generator().manual_seed(2))
        mask = torch.ones(1, seq, dtype=torch.int64)
        mask[0, seq - min(16, seq // 8) :] = 0  # padded tail, so the mask matters
        outs = ["last_hidden_state"] + (["pooler_output"] if name == "bert_base" else [])
        return (ids, mask), ["input_ids", "attention_mask"], outs
    side = 299 if name.endswith("inception_v3") else IMAGE[-1]
    x = torch.randn(*IMAGE[:2], side, side, generator=torch.Generator().manual_seed(2))
    return (x,), ["input"], ["last_hidden_state" if name.startswith("hf_") else "logits"]


NORMS = (nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)


def _non_degenerate(model: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
    """Seeded, ordinary-size parameters and statistics (see the module doc)."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, NORMS) and m.weight is not None:
                m.weight.uniform_(0.7, 1.3, generator=gen)
                m.bias.uniform_(-0.1, 0.1, generator=gen)
        for p in model.parameters():
            if not p.abs().max() > 0:
                p.uniform_(-0.02, 0.02, generator=gen)
        bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
        if bns:  # cumulative statistics of one seeded batch, through the model in order
            for m in bns:
                m.reset_running_stats()
                m.momentum = None
            model.train()
            batch = torch.randn(4, *IMAGE[1:], generator=gen)
            model(batch)
        model.eval()
        out = model(*args)
        first = out[0] if isinstance(out, tuple) else out
        std = float(first.std())
        last = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))][-1]
        if not isinstance(first, torch.Tensor) or first.dim() != 2 or std == 0:
            return
        # classifier logits: bring their spread to ~2 (fresh heads give ~0.01-0.3)
        last.weight.mul_(2.0 / std)
        if last.bias is not None:
            last.bias.mul_(2.0 / std)


def export_one(
    name: str, out_dir: Path, exporter: str = "torchscript", seq: int = SEQ
) -> dict[str, Any]:
    torch.manual_seed(0)
    build, zoo = {**MODELS, **EXTRA, **VARIANTS}[name]
    model = build()
    args, in_names, out_names = _inputs(name, seq)
    _non_degenerate(model, args)
    dynamo = exporter == "dynamo"
    tag = f"_s{seq}" if name in TEXT and seq != SEQ else ""
    path = out_dir / f"{name}{tag}{'_dynamo' if dynamo else ''}.onnx"
    t0 = time.perf_counter()
    with torch.no_grad():
        outs = model(*args)
        if dynamo:  # torch.export + onnxscript, the default of torch.onnx.export since 2.9
            torch.onnx.export(model, args, str(path), dynamo=True, input_names=in_names,
                              output_names=out_names, verbose=False)  # fmt: skip
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17,
                              input_names=in_names, output_names=out_names,
                              do_constant_folding=True)  # fmt: skip
    if name in TEXT:
        import onnx

        m = onnx.load(str(path), load_external_data=False)  # .data (dynamo) stays as is
        onnx.helper.set_model_props(m, {"autofusion.input_range.input_ids": "0,30522"})
        onnx.save(m, str(path))
    outs = outs if isinstance(outs, tuple) else (outs,)
    stats = {n: [round(float(o.abs().max()), 3), round(float(o.std()), 3)]
             for n, o in zip(out_names, outs)}  # fmt: skip
    data = path.with_name(path.name + ".data")  # the dynamo exporter's external weights
    mb = (path.stat().st_size + (data.stat().st_size if data.exists() else 0)) / 2**20
    print(f"{path.name}: {mb:.1f} MB in {time.perf_counter() - t0:.1f} s; "
          f"output max|y|, std: {stats}", flush=True)  # fmt: skip
    return {"file": path.name, "zoo": zoo or None, "exporter": exporter, "inputs": in_names,
            "outputs": out_names, "output_max_std": stats}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for the .onnx files")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated names of the nine, the extras or the variants; "
                    f"'extra': all the extras ({', '.join(EXTRA)}); 'variants': all the "
                    f"variants ({', '.join(VARIANTS)})")  # fmt: skip
    ap.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript",
                    help="TorchScript (opset 17, NAME.onnx) or torch.export via onnxscript "
                    "(its default opset, NAME_dynamo.onnx)")  # fmt: skip
    ap.add_argument("--seq", type=int, default=SEQ,
                    help=f"sequence length of the text models ({', '.join(TEXT)}; default "
                    f"{SEQ}); another writes NAME_sSEQ.onnx")  # fmt: skip
    a = ap.parse_args(argv)
    if not 16 <= a.seq <= 512:  # BertConfig's 512 positions
        ap.error(f"--seq {a.seq}: from 16 to 512")
    names = [n for m in a.models.split(",") for n in SETS.get(m, [m])]
    if a.seq != SEQ and not any(n in TEXT for n in names):
        ap.error(f"--seq {a.seq}: none of the models is a text model ({', '.join(TEXT)})")
    unknown = [n for n in names if n not in MODELS and n not in EXTRA and n not in VARIANTS]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}")
    a.out.mkdir(parents=True, exist_ok=True)
    manifest_path = a.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    status = 0
    for name in names:
        try:
            entry = export_one(name, a.out, a.exporter, a.seq)
            manifest[entry["file"].removesuffix(".onnx")] = entry
        except Exception as e:  # report and go on with the next model
            print(f"{name}: EXPORT FAILED: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            status = 1
            continue
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
