"""All autofusion passes, registered lazily: ``name -> factory`` (as in xdsl.transforms).

Add a pass: write ``passes/<name>.py`` with one ``ModulePass`` subclass and add one entry
here. ``test/python/test_registry.py`` checks keys against pass names and xDSL's own.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    passes: dict[str, Callable[[], type[ModulePass]]] = {}
    from autofusion.lowering.c import c_passes  # C lowering passes (lowering/c/)

    passes.update(c_passes())
    passes.update(_memory_passes())  # plan-buffers, tile-fusion (memory)
    passes.update(_fusion_passes())  # fold-batchnorm, recognize-*, fuse-* (fusion)
    passes.update(_ascendc_passes())  # lower-fusion-to-ascendc (lowering/ascendc/)
    return passes


def _ascendc_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def lower_fusion_to_ascendc() -> type[ModulePass]:
        from autofusion.lowering.ascendc.lower import LowerFusionToAscendC

        return LowerFusionToAscendC

    return {"lower-fusion-to-ascendc": lower_fusion_to_ascendc}


def _memory_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def plan_buffers() -> type[ModulePass]:
        from autofusion.passes.plan_buffers import PlanBuffers

        return PlanBuffers

    def tile_fusion() -> type[ModulePass]:
        from autofusion.passes.tile_fusion import TileFusion

        return TileFusion

    return {"plan-buffers": plan_buffers, "tile-fusion": tile_fusion}


def _fusion_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Tensor-level fusion passes (docs/fusion.md)."""
    table = {
        "canonicalize-nn": ("canonicalize_nn", "CanonicalizeNN"),
        "fold-batchnorm": ("fold_batchnorm", "FoldBatchNorm"),
        "recognize-layernorm": ("recognize_layernorm", "RecognizeLayerNorm"),
        "recognize-gelu": ("recognize_gelu", "RecognizeGelu"),
        "recognize-attention": ("recognize_attention", "RecognizeAttention"),
        "fuse-conv-bn-relu": ("fuse_conv_bn_relu", "FuseConvBnRelu"),
        "fuse": ("fuse", "FuseNN"),
        "fuse-conv-chain": ("fuse_conv_chain", "FuseConvChain"),
        "assign-layout": ("assign_layout", "AssignLayout"),
        "fuse-conv-pool": ("fuse_conv_pool", "FuseConvPool"),
        "fuse-conv-pair": ("fuse_conv_pair", "FuseConvPair"),
        "fuse-pw-chain": ("fuse_pw_chain", "FusePwChain"),
        "merge-sibling-convs": ("merge_sibling_convs", "MergeSiblingConvs"),
        "validate-precision": ("validate_precision", "ValidatePrecision"),
        "assign-precision": ("assign_precision", "AssignPrecision"),
    }

    def factory(module: str, cls: str) -> Callable[[], type[ModulePass]]:
        def load() -> type[ModulePass]:
            import importlib

            return getattr(importlib.import_module(f"autofusion.passes.{module}"), cls)

        return load

    return {name: factory(m, c) for name, (m, c) in table.items()}
