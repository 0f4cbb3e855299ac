"""Check zoo models on the Ascend C CPU functional model (the figures in docs/ascendc.md).

    python -m autofusion.lowering.ascendc.zoo_check MODEL [MODEL ...]

For each model: import, the tensor-level pipeline (fusion), ``lower-fusion-to-ascendc``; then
every generated kernel runs on the CPU model and its outputs are compared with the reference
interpreter evaluating the group (or single op) it came from on the same inputs, and the
model's outputs (uncovered ops on the interpreter) with onnxruntime. One JSON line per model.
Times are CPU-emulation times: meaningless for an NPU.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any

import numpy as np

from autofusion.dialects.attrs import ASCENDC_FALLBACK
from autofusion.testing import close as _close
from autofusion.testing import compare


def launch_sources(fused: Any, lowered: Any) -> list[Any]:
    """For each ``ascendc.launch`` of ``lowered``'s @main, in order, the op of ``fused``'s
    @main it replaced (lowering replaces ops in place; only constants are added)."""

    def ops(module: Any) -> list[Any]:
        fn = next(o for o in module.body.block.ops if o.name == "func.func")
        return [o for o in fn.body.block.ops if o.name != "nn.constant"]

    before, after = ops(fused), ops(lowered)
    if len(before) != len(after):
        raise AssertionError("lowered @main does not correspond op for op to the fused one")
    return [b for b, a in zip(before, after) if a.name == "ascendc.launch"]


def check_model(name: str) -> dict[str, Any]:
    import onnxruntime as ort
    from xdsl.dialects import func

    from autofusion import zoo
    from autofusion.dialects import ascendc as ac
    from autofusion.dialects import fusion
    from autofusion.frontend.onnx_import import import_onnx
    from autofusion.interpreter import IMPLS
    from autofusion.lowering.ascendc.cpu_run import CpuModelRunner
    from autofusion.lowering.ascendc.lower import outline_single
    from autofusion.lowering.ascendc.project import workspace_bytes
    from autofusion.pipeline import Pipeline, PipelineOptions, make_context

    proto = zoo.get_model(name)
    feeds = zoo.sample_inputs(proto, 0)
    t0 = time.perf_counter()
    module = import_onnx(proto)
    ctx = make_context()
    pipeline = Pipeline.from_options(PipelineOptions(target="ascendc"))
    pipeline.tensor().run(module, ctx)
    fused = module.clone()
    pipeline.lowering().run(module, ctx)
    t1 = time.perf_counter()
    fn = next(o for o in module.body.block.ops if isinstance(o, func.FuncOp))
    kernels = {k.sym_name.data: k for k in module.body.block.ops if isinstance(k, ac.KernelOp)}
    fallback = [o for o in fn.body.block.ops if isinstance(o, fusion.KernelOp)]
    uncovered = Counter(
        o.name
        for o in fn.body.block.ops
        if o.name not in ("ascendc.launch", "nn.constant", "nn.reshape", "func.return")
    )
    runner = CpuModelRunner(module)
    t2 = time.perf_counter()
    got = runner.run(feeds)
    t3 = time.perf_counter()
    bad = []
    for (kname, args, outs), src in zip(runner.trace, launch_sources(fused, module)):
        if not isinstance(src, fusion.KernelOp):
            src = outline_single(src)  # the kernel's inputs: scalar constants are inside
        ref = IMPLS[fusion.KernelOp](src, args[: len(src.inputs)])
        for g, r in zip(outs, ref):
            if not _close(g, np.asarray(r)):
                bad.append(kname)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = sess.run(None, feeds)
    outs = list(got.values())
    groups = [k for k in kernels.values() if not k.pattern.data.startswith("single_")]
    attention = [
        k for k in kernels.values() if any(isinstance(o, ac.AttentionOp) for o in k.walk())
    ]
    return {
        "model": name,
        "fused_groups": len(groups) + len(fallback),
        "groups_lowered": len(groups),
        "single_op_kernels": len(kernels) - len(groups),
        "cube_kernels": sum(k.kind.data == "cube" for k in kernels.values()),
        "vector_kernels": sum(k.kind.data == "vector" for k in kernels.values()),
        "attention_kernels": len(attention),
        # user workspace (GM scratch) of the largest launch: the manifest's workspace_bytes_max
        "workspace_bytes_max": max((workspace_bytes(k) for k in kernels.values()), default=0),
        "attention_workspace_bytes": max((workspace_bytes(k) for k in attention), default=0),
        "fallback_reasons": dict(Counter(o.attributes[ASCENDC_FALLBACK].data for o in fallback)),  # type: ignore[attr-defined]
        "host_reference_ops": dict(uncovered),
        "kernels_checked": len(runner.trace),
        "kernels_mismatch": bad,
        "model_matches_onnxruntime": all(_close(g, r) for g, r in zip(outs, refs)),
        "max_abs_err": max(compare(g, r).max_abs_err for g, r in zip(outs, refs)),
        "lower_s": round(t1 - t0, 1),
        "cpu_build_s": round(t2 - t1, 1),
        "cpu_run_s_meaningless": round(t3 - t2, 1),
    }


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    ok = True
    for name in names:
        r = check_model(name)
        ok &= r["model_matches_onnxruntime"] and not r["kernels_mismatch"]
        print(json.dumps(r), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
