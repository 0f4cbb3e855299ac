"""``emit_project(module, out_dir)``: the files of an Ascend C / AscendCL project.

Layout written into ``out_dir``::

    kernels/<k>.asc, kernels/<k>_tiling.h, kernels/<k>_tiling.cpp   one per fused kernel
    host/model.cpp     AscendCL host program: af_init / af_run_<k> / af_run_model / af_finalize
    host/main.cpp      reads inputs from files, runs the model, writes outputs
    cpu_model/         the CPU functional model, acl_decls.h and the AscendCL CPU stub
    weights.bin        constants the kernels read (64-byte aligned), never C literals
    manifest.json      inputs/outputs (ONNX names, shapes), kernels (ONNX origins, tiling,
                       user workspace ``workspace_bytes``), ``workspace_bytes_max``
    CMakeLists.txt     CANN build (find_package(ASC)), or -DAUTOFUSION_CPU_MODEL=ON with g++

``module`` must have been through ``lower-fusion-to-ascendc`` (the ascendc backend's lowering
pass; a fusion kernel not lowered is an error naming it: printers never lower). Kernels without
an Ascend C lowering are listed in the manifest under ``fallback``; when any op of ``@main`` is
not covered, ``af_run_model`` reports that and the per-kernel entry points remain usable (the
CPU runner mixes them with the host reference, see ``cpu_run.py``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import ascendc as ac
from autofusion.dialects import fusion, nn
from autofusion.dialects.attrs import ASCENDC_FALLBACK, onnx_name
from autofusion.dialects.base import shape_of
from autofusion.dialects.dtypes import numpy_from_dense
from autofusion.dialects.shapes import numel
from autofusion.errors import AutofusionError
from autofusion.frontend.batch import BatchPlan, module_batch
from autofusion.lowering.ascendc.kernel_printer import HEADER, comment_safe, print_kernel

CPU_MODEL_DIR = Path(__file__).parent / "cpu_model"


def main_func(module: ModuleOp) -> func.FuncOp:
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise AutofusionError("ascendc: the module has no func.func @main")


def kernels_of(module: ModuleOp) -> list[ac.KernelOp]:
    return [op for op in module.body.block.ops if isinstance(op, ac.KernelOp)]


def check_lowered(module: ModuleOp) -> None:
    """Raise ``AutofusionError`` if a fusion kernel of ``@main`` has not been through
    ``lower-fusion-to-ascendc`` (lowered kernels are ``ascendc.launch`` ops; the ones it could
    not lower carry ``ascendc.fallback``). The printers only print; they never lower."""
    fn = main_func(module)
    for o in fn.body.block.ops:
        if isinstance(o, fusion.KernelOp) and ASCENDC_FALLBACK not in o.attributes:
            raise AutofusionError(
                f"ascendc target: op {o.name} (pattern {o.pattern.data!r}) in @main is not "
                "lowered; the ascendc target only prints lowered IR: run "
                "-p 'lower-fusion-to-ascendc' first"
            )


def _io_names(fn: func.FuncOp, which: str) -> list[str]:
    attrs = fn.arg_attrs if which == "arg" else fn.res_attrs
    n = len(fn.args) if which == "arg" else len(fn.function_type.outputs.data)
    names = []
    for i in range(n):
        name = f"{'arg' if which == 'arg' else 'result'}{i}"  # as the interpreter names them
        if isinstance(attrs, ArrayAttr) and i < len(attrs.data):
            d = attrs.data[i]
            name = onnx_name(d) or name
        names.append(name)
    return names


@dataclass
class HostPlan:
    """Device buffers of @main: index per SSA value, constants with weight offsets."""

    values: dict[SSAValue, int]
    sizes: list[int]  # bytes per buffer
    weights: list[tuple[int, int, int]]  # (buffer, offset in weights.bin, bytes)
    blob: bytes
    covered: bool
    uncovered: list[str]


def plan_host(fn: func.FuncOp) -> HostPlan:
    values: dict[SSAValue, int] = {}
    sizes: list[int] = []
    weights: list[tuple[int, int, int]] = []
    blob = bytearray()
    uncovered: list[str] = []

    def add(v: SSAValue) -> int:
        values[v] = len(sizes)
        sizes.append(max(4, numel(shape_of(v)) * 4))
        return values[v]

    for a in fn.args:
        add(a)
    for op in fn.body.block.ops:
        if isinstance(op, nn.ConstantOp):
            if not any(isinstance(u.operation, ac.LaunchOp | nn.ReshapeOp) for u in op.y.uses):
                continue
            if op.is_elided:
                raise AutofusionError(
                    "ascendc: constant is elided (dense_resource<__elided__>); weights are needed"
                )
            arr = np.ascontiguousarray(numpy_from_dense(op.value), dtype=np.float32)  # type: ignore[arg-type]
            idx = add(op.y)
            off = (len(blob) + 63) // 64 * 64
            blob.extend(b"\0" * (off - len(blob)))
            blob.extend(arr.tobytes())
            weights.append((idx, off, arr.nbytes))
        elif isinstance(op, ac.LaunchOp):
            for r in op.outputs:
                add(r)
        elif isinstance(op, nn.ReshapeOp):
            if op.x in values:
                values[op.y] = values[op.x]
            else:
                add(op.y)
                uncovered.append(op.name)
        elif isinstance(op, func.ReturnOp):
            continue
        else:
            for r in op.results:
                add(r)
            if isinstance(op, fusion.KernelOp):
                why = op.attributes.get(ASCENDC_FALLBACK, StringAttr("not lowered"))
                uncovered.append(f"{op.name} ({why.data})")  # type: ignore[union-attr]
            elif isinstance(why := op.attributes.get(ASCENDC_FALLBACK), StringAttr):
                uncovered.append(f"{op.name} ({why.data})")  # a single op the kernels lack
            else:
                uncovered.append(op.name)
    return HostPlan(values, sizes, weights, bytes(blob), not uncovered, uncovered)


def print_host(module: ModuleOp, plan: HostPlan) -> str:
    """``host/model.cpp``: AscendCL init, one checked entry point per kernel, the model run."""
    fn = main_func(module)
    kernels = kernels_of(module)
    out = [
        HEADER,
        "// AscendCL host program. Every AscendCL call's return code is checked (AF_ACL_CHECK).",
        "#include <cstdint>",
        "#include <cstdio>",
        "#include <cstdlib>",
        "#include <vector>",
        "#ifdef AUTOFUSION_CPU_MODEL",
        '#include "acl_decls.h"',
        '#include "ascendc_cpu_model.h"',
        "#else",
        '#include "acl/acl.h"',
        '#include "tiling/platform/platform_ascendc.h"',
        "#endif",
    ]
    for k in kernels:
        out.append(f'#include "{k.sym_name.data}_tiling.h"')
    acl_check = [
        "#define AF_ACL_CHECK(call)",
        "    do {",
        "        aclError af_rc_ = (call);",
        "        if (af_rc_ != ACL_SUCCESS) {",
        '            std::fprintf(stderr, "%s:%d: %s failed: error %d\\n", __FILE__, __LINE__, '
        "#call,",
        "                         static_cast<int>(af_rc_));",
        "            return 1;",
        "        }",
    ]
    # the continuation backslashes line up in column 89
    out += ["", *(f"{line:<87} \\" for line in acl_check), "    } while (0)", ""]
    for k in kernels:
        n = len([a for a in k.arg_names.data if a.data != "workspace"])
        params = ", ".join(["void*"] * (n + 2))
        out.append(
            f'extern "C" void {k.sym_name.data}_launch(uint32_t blockDim, '
            f"aclrtStream stream, {params});"
        )
    out += [
        "",
        "static aclrtStream g_stream = nullptr;",
        "static int32_t g_device = 0;",
        "",
        "// Initialise AscendCL on deviceId and create the stream kernels run on.",
        'extern "C" int af_init(int32_t deviceId)',
        "{",
        "    AF_ACL_CHECK(aclInit(nullptr));",
        "    AF_ACL_CHECK(aclrtSetDevice(deviceId));",
        "    AF_ACL_CHECK(aclrtCreateStream(&g_stream));",
        "    g_device = deviceId;",
        "    return 0;",
        "}",
        "",
        'extern "C" int af_finalize(void)',
        "{",
        "    AF_ACL_CHECK(aclrtDestroyStream(g_stream));",
        "    g_stream = nullptr;",
        "    AF_ACL_CHECK(aclrtResetDevice(g_device));",
        "    AF_ACL_CHECK(aclFinalize());",
        "    return 0;",
        "}",
        "",
    ]
    for k in kernels:
        name = k.sym_name.data
        td = "".join(p.capitalize() for p in name.split("_")) + "TilingData"
        gm = [a.data for a in k.arg_names.data if a.data != "workspace"]
        cube = k.kind.data == "cube"
        origins = ", ".join(comment_safe(o.data) for o in k.origins.data)
        core = "GetCoreNumAic" if cube else "GetCoreNumAiv"
        ws = f"{name}_workspace_bytes(&td)" if cube else "0"
        args = ", ".join(f"args[{i}]" for i in range(len(gm)))
        runtime = runtime_sizes(k)
        doc = "".join(f"\n// {r}: run-time size, {lo}..{hi}." for r, (lo, hi) in runtime.items())
        params = "".join(f", uint32_t {r}" for r in runtime)
        sizes = "".join(f"{r}, " for r in runtime)
        out += [
            f"// {name} ({comment_safe(k.pattern.data)}: {origins}).",
            f"// args: device pointers to {len(gm)} tensors (inputs then outputs).{doc}",
            f'extern "C" int af_run_{name}(void* const* args{params})',
            "{",
            f"    {td} td{{}};",
            "    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();",
            f"    const uint32_t blockDim = {name}_tiling(platform->{core}(), {sizes}&td);",
            "    if (blockDim == 0) {",
            f'        std::fprintf(stderr, "{name}: tiling failed\\n");',
            "        return 1;",
            "    }",
            "    const size_t wsBytes = static_cast<size_t>(platform->GetLibApiWorkSpaceSize()) + "
            f"{ws};",
            "    void* tilingDev = nullptr;",
            "    void* wsDev = nullptr;",
            "    AF_ACL_CHECK(aclrtMalloc(&tilingDev, sizeof(td), ACL_MEM_MALLOC_HUGE_FIRST));",
            "    AF_ACL_CHECK(aclrtMemcpy(tilingDev, sizeof(td), &td, sizeof(td), "
            "ACL_MEMCPY_HOST_TO_DEVICE));",
            "    AF_ACL_CHECK(aclrtMalloc(&wsDev, wsBytes, ACL_MEM_MALLOC_HUGE_FIRST));",
            f"    {name}_launch(blockDim, g_stream, {args}, wsDev, tilingDev);",
            "    AF_ACL_CHECK(aclrtSynchronizeStream(g_stream));",
            "    AF_ACL_CHECK(aclrtFree(wsDev));",
            "    AF_ACL_CHECK(aclrtFree(tilingDev));",
            "    return 0;",
            "}",
            "",
        ]
    kmap = {k.sym_name.data: k for k in kernels}
    out += _print_model_run(fn, plan, kmap, module_batch(module))
    return "\n".join(out) + "\n"


def runtime_sizes(kernel: ac.KernelOp) -> dict[str, tuple[int, int]]:
    """The kernel's run-time sizes and their ranges (empty: compile-time tiling)."""
    inputs = kernel.tiling.input_values()
    return {r: (1, inputs[r]) for r in kernel.tiling.runtime_names()}


def _batch_flags(fn: func.FuncOp, batch: BatchPlan | None) -> tuple[list[bool], list[bool]]:
    """Which inputs and outputs of ``@main`` carry the run-time batch in dim 0."""
    ins = set(batch.inputs) if batch else set()
    outs = set(batch.outputs) if batch else set()
    return (
        [n in ins for n in _io_names(fn, "arg")],
        [n in outs for n in _io_names(fn, "res")],
    )


def _print_model_run(
    fn: func.FuncOp, plan: HostPlan, kernels: dict[str, ac.KernelOp], batch: BatchPlan | None
) -> list[str]:
    """``af_batch_*``, ``af_run_model_batch`` and ``af_run_model`` (batch 1). A model compiled
    for a run-time batch (``c.batch``: batch-separable, built at batch 1) runs its launches
    once per sample, stepping each batched input and output by one sample's bytes; weights
    and device buffers are set up once per call. Without it the range is 1..1."""
    sym, lo, hi = (batch.symbol, batch.lo, batch.hi) if batch else ("", 1, 1)
    in_flags, out_flags = _batch_flags(fn, batch)
    out = [
        "// The run-time batch (docs/ascendc.md): af_run_model_batch takes any batch in",
        '// af_batch_min()..af_batch_max(); af_batch_symbol() is "" for a fixed batch.',
        f'extern "C" const char* af_batch_symbol(void) {{ return "{comment_safe(sym)}"; }}',
        f'extern "C" int64_t af_batch_min(void) {{ return {lo}; }}',
        f'extern "C" int64_t af_batch_max(void) {{ return {hi}; }}',
        "",
        "// Run the whole model: host input buffers in, host output buffers out (float32,",
        "// shapes in manifest.json, batched ones with `batch` samples in dim 0).",
        "// weights: the contents of weights.bin.",
        'extern "C" int af_run_model_batch(const void* weights, int64_t batch, '
        "const void* const* inputs, void* const* outputs)",
        "{",
    ]
    if not plan.covered:
        listed = comment_safe(", ".join(sorted(set(plan.uncovered))))
        out += [
            f"    // Not every op of the model has an Ascend C lowering: {listed}.",
            "    (void)weights; (void)batch; (void)inputs; (void)outputs;",
            '    std::fprintf(stderr, "af_run_model: the model has ops without an Ascend C '
            'lowering; "',
            '                 "run the kernels one by one (af_run_<kernel>)\\n");',
            "    return 1;",
            "}",
        ]
    else:
        where = f" of symbol {sym}" if sym else " (this model has a fixed batch)"
        out += [
            "    if (batch < af_batch_min() || batch > af_batch_max()) {",
            '        std::fprintf(stderr, "af_run_model_batch: batch %lld is outside the range '
            f'%lld..%lld{comment_safe(where)}\\n",',
            "                     static_cast<long long>(batch), "
            "static_cast<long long>(af_batch_min()),",
            "                     static_cast<long long>(af_batch_max()));",
            "        return 1;",
            "    }",
        ]
        out += _model_body(fn, plan, kernels, in_flags, out_flags)
    out += [
        "",
        'extern "C" int af_run_model(const void* weights, const void* const* inputs, '
        "void* const* outputs)",
        "{",
        "    return af_run_model_batch(weights, 1, inputs, outputs);",
        "}",
    ]
    return out


def _model_body(
    fn: func.FuncOp,
    plan: HostPlan,
    kernels: dict[str, ac.KernelOp],
    in_flags: list[bool],
    out_flags: list[bool],
) -> list[str]:
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    nbuf = len(plan.sizes)
    out = [
        f"    static const size_t kBytes[{nbuf}] = {{{', '.join(f'{s}u' for s in plan.sizes)}}};",
        f"    void* buf[{nbuf}] = {{}};",
        f"    for (int i = 0; i < {nbuf}; i++) {{",
        "        AF_ACL_CHECK(aclrtMalloc(&buf[i], kBytes[i], ACL_MEM_MALLOC_HUGE_FIRST));",
        "    }",
        "    const unsigned char* w = static_cast<const unsigned char*>(weights);",
    ]
    for idx, off, nbytes in plan.weights:
        out.append(
            f"    AF_ACL_CHECK(aclrtMemcpy(buf[{idx}], kBytes[{idx}], w + {off}u, "
            f"{nbytes}u, ACL_MEMCPY_HOST_TO_DEVICE));"
        )
    out.append("    (void)w;")
    out.append("    for (int64_t b = 0; b < batch; b++) {")
    for i, batched in enumerate(in_flags):
        step = f" + static_cast<size_t>(b) * {plan.sizes[i]}u" if batched else ""
        out.append(
            f"        AF_ACL_CHECK(aclrtMemcpy(buf[{i}], kBytes[{i}], "
            f"static_cast<const unsigned char*>(inputs[{i}]){step}, kBytes[{i}], "
            "ACL_MEMCPY_HOST_TO_DEVICE));"
        )
    for op in fn.body.block.ops:
        if isinstance(op, ac.LaunchOp):
            vals = [plan.values[v] for v in [*op.inputs, *op.outputs]]
            name = op.kernel.root_reference.data
            out.append(f"        {{  // {name}")
            out.append(f"            void* args[] = {{{', '.join(f'buf[{v}]' for v in vals)}}};")
            kernel = kernels[name]
            # the model's own shapes: run-time sizes at their upper bounds
            sizes = "".join(f", {hi}u" for _, hi in runtime_sizes(kernel).values())
            out.append(f"            if (af_run_{name}(args{sizes}) != 0) return 1;")
            out.append("        }")
    for j, v in enumerate(ret.arguments):
        b = plan.values[v]
        nbytes = numel(shape_of(v)) * 4
        if nbytes == 0:
            continue
        step = f" + static_cast<size_t>(b) * {nbytes}u" if out_flags[j] else ""
        out.append(
            f"        AF_ACL_CHECK(aclrtMemcpy(static_cast<unsigned char*>(outputs[{j}]){step}, "
            f"{nbytes}u, buf[{b}], {nbytes}u, ACL_MEMCPY_DEVICE_TO_HOST));"
        )
    out += [
        "    }",
        f"    for (int i = 0; i < {nbuf}; i++) {{",
        "        AF_ACL_CHECK(aclrtFree(buf[i]));",
        "    }",
        "    return 0;",
        "}",
    ]
    return out


def print_main(fn: func.FuncOp, plan: HostPlan, batch: BatchPlan | None = None) -> str:
    """``host/main.cpp``: ``model [--batch N] weights.bin in0.bin ... out0.bin ...`` (raw
    float32; batched inputs and outputs hold N samples)."""
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    n_in, n_out = len(fn.args), len(ret.arguments)
    in_sizes = [plan.sizes[i] for i in range(n_in)]
    out_sizes = [numel(shape_of(v)) * 4 for v in ret.arguments]
    in_flags, out_flags = _batch_flags(fn, batch)

    def c_list(xs: list) -> str:
        return ", ".join(str(int(x)) for x in xs) or "0"

    return f"""{HEADER}// Usage: model [--batch N] weights.bin <{n_in} input files> <{n_out} output files>
// (raw float32; inputs/outputs that carry the batch hold N samples, default 1).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int af_init(int deviceId);
extern "C" int af_finalize(void);
extern "C" int64_t af_batch_min(void);
extern "C" int64_t af_batch_max(void);
extern "C" int af_run_model_batch(const void* weights, int64_t batch, const void* const* inputs, void* const* outputs);

static bool ReadFile(const char* path, std::vector<unsigned char>& data, long expect)
{{
    FILE* f = std::fopen(path, "rb");
    if (f == nullptr) return false;
    std::fseek(f, 0, SEEK_END);
    long n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (expect >= 0 && n != expect) {{ std::fclose(f); return false; }}
    data.resize(n > 0 ? static_cast<size_t>(n) : 1u);
    bool ok = n == 0 || std::fread(data.data(), 1, static_cast<size_t>(n), f) == static_cast<size_t>(n);
    std::fclose(f);
    return ok;
}}

int main(int argc, char** argv)
{{
    const long inBytes[] = {{{c_list(in_sizes)}}};
    const long outBytes[] = {{{c_list(out_sizes)}}};
    const int inBatched[] = {{{c_list(in_flags)}}};
    const int outBatched[] = {{{c_list(out_flags)}}};
    long long batch = 1;
    if (argc > 2 && std::strcmp(argv[1], "--batch") == 0) {{
        char* end = nullptr;
        batch = std::strtoll(argv[2], &end, 10);
        if (end == argv[2] || *end != '\\0' || batch < af_batch_min() || batch > af_batch_max()) {{
            std::fprintf(stderr, "--batch %s: expected an integer in %lld..%lld\\n", argv[2],
                         static_cast<long long>(af_batch_min()), static_cast<long long>(af_batch_max()));
            return 2;
        }}
        argc -= 2;
        argv += 2;
    }}
    if (argc != {2 + n_in + n_out}) {{
        std::fprintf(stderr, "usage: %s [--batch N] weights.bin <{n_in} inputs> <{n_out} outputs>\\n", argv[0]);
        return 2;
    }}
    std::vector<unsigned char> weights;
    if (!ReadFile(argv[1], weights, -1)) {{ std::fprintf(stderr, "cannot read %s\\n", argv[1]); return 1; }}
    std::vector<std::vector<unsigned char>> in({n_in}), out({n_out});
    std::vector<const void*> inPtr;
    std::vector<void*> outPtr;
    for (int i = 0; i < {n_in}; i++) {{
        const long expect = inBytes[i] * (inBatched[i] ? batch : 1);
        if (!ReadFile(argv[2 + i], in[i], expect)) {{ std::fprintf(stderr, "cannot read %s (expected %ld bytes)\\n", argv[2 + i], expect); return 1; }}
        inPtr.push_back(in[i].data());
    }}
    for (int j = 0; j < {n_out}; j++) {{
        out[j].resize(static_cast<size_t>(outBytes[j] * (outBatched[j] ? batch : 1)) + 1u);
        outPtr.push_back(out[j].data());
    }}
    if (af_init(0) != 0) return 1;
    int rc = af_run_model_batch(weights.data(), batch, inPtr.data(), outPtr.data());
    if (af_finalize() != 0) return 1;
    if (rc != 0) return 1;
    for (int j = 0; j < {n_out}; j++) {{
        const size_t bytes = out[j].size() - 1u;
        FILE* f = std::fopen(argv[2 + {n_in} + j], "wb");
        if (f == nullptr || std::fwrite(out[j].data(), 1, bytes, f) != bytes) {{
            std::fprintf(stderr, "cannot write %s\\n", argv[2 + {n_in} + j]);
            return 1;
        }}
        std::fclose(f);
    }}
    return 0;
}}
"""  # noqa: E501 - the printed source keeps its own lines


CMAKE = """# Generated by autofusion (Ascend C target).
# On a CANN install (ASCEND_HOME_PATH set, e.g. by set_env.sh):
#   cmake -S . -B build && cmake --build build      -> build/model (runs on the NPU)
# Without CANN, the CPU functional model (logic check only, not NPU performance):
#   cmake -S . -B build -DAUTOFUSION_CPU_MODEL=ON && cmake --build build
cmake_minimum_required(VERSION 3.16)
option(AUTOFUSION_CPU_MODEL "build against the CPU functional model instead of CANN" OFF)
set(SOC_VERSION "Ascend910B1" CACHE STRING "NPU SoC to build for")
set(NPU_ARCH "dav-2201" CACHE STRING "--npu-arch for the ASC compiler (dav-2201: Atlas A2)")

file(GLOB KERNEL_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.asc)
file(GLOB TILING_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*_tiling.cpp)
set(HOST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host/model.cpp ${CMAKE_CURRENT_SOURCE_DIR}/host/main.cpp)

if(AUTOFUSION_CPU_MODEL)
  project(autofusion_ascendc_cpu LANGUAGES CXX)
  set(CMAKE_CXX_STANDARD 17)
  set_source_files_properties(${KERNEL_SOURCES} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
  add_executable(model ${KERNEL_SOURCES} ${TILING_SOURCES} ${HOST_SOURCES}
                 ${CMAKE_CURRENT_SOURCE_DIR}/cpu_model/acl_cpu_stub.cpp)
  target_compile_definitions(model PRIVATE AUTOFUSION_CPU_MODEL)
  target_include_directories(model PRIVATE cpu_model kernels)
else()
  if(NOT DEFINED ENV{ASCEND_HOME_PATH})
    message(FATAL_ERROR "ASCEND_HOME_PATH is not set: source <CANN>/set_env.sh, or configure with -DAUTOFUSION_CPU_MODEL=ON")
  endif()
  find_package(ASC REQUIRED HINTS $ENV{ASCEND_HOME_PATH}/lib64/cmake $ENV{ASCEND_HOME_PATH}/compiler/tikcpp/ascendc_kernel_cmake)
  project(autofusion_ascendc LANGUAGES ASC CXX)
  add_executable(model ${KERNEL_SOURCES} ${TILING_SOURCES} ${HOST_SOURCES})
  target_include_directories(model PRIVATE kernels
    $ENV{ASCEND_HOME_PATH}/include $ENV{ASCEND_HOME_PATH}/include/tiling)
  target_compile_options(model PRIVATE $<$<COMPILE_LANGUAGE:ASC>:--npu-arch=${NPU_ARCH}>)
  target_link_directories(model PRIVATE $ENV{ASCEND_HOME_PATH}/lib64)
  target_link_libraries(model PRIVATE ascendcl tiling_api platform register)
endif()
"""  # noqa: E501 - the printed source keeps its own lines


def emit_project(module: ModuleOp, out_dir: str | Path) -> None:
    """Write the Ascend C / AscendCL project of ``module`` into ``out_dir`` (see module doc)."""
    out = Path(out_dir)
    check_lowered(module)
    fn = main_func(module)
    plan = plan_host(fn)
    (out / "kernels").mkdir(parents=True, exist_ok=True)
    (out / "host").mkdir(parents=True, exist_ok=True)
    manifest_kernels = []
    for k in kernels_of(module):
        files = print_kernel(k)
        name = k.sym_name.data
        (out / "kernels" / f"{name}.asc").write_text(files.kernel_source)
        (out / "kernels" / f"{name}_tiling.h").write_text(files.tiling_header)
        (out / "kernels" / f"{name}_tiling.cpp").write_text(files.tiling_source)
        manifest_kernels.append(
            {
                "name": name,
                "kind": k.kind.data,
                "pattern": k.pattern.data,
                "origins": [o.data for o in k.origins.data],
                "tiling": k.tiling_values(),
                "tiling_kind": k.tiling.kind.data,
                "runtime_sizes": {r: list(v) for r, v in runtime_sizes(k).items()},
                "workspace_bytes": workspace_bytes(k),
                **({"static_reason": k.static_reason.data} if k.static_reason else {}),
            }
        )
    (out / "host" / "model.cpp").write_text(print_host(module, plan))
    (out / "host" / "main.cpp").write_text(print_main(fn, plan, module_batch(module)))
    (out / "weights.bin").write_bytes(plan.blob)
    (out / "CMakeLists.txt").write_text(CMAKE)
    cpu = out / "cpu_model"
    cpu.mkdir(exist_ok=True)
    for f in ("ascendc_cpu_model.h", "acl_decls.h", "acl_cpu_stub.cpp"):
        shutil.copyfile(CPU_MODEL_DIR / f, cpu / f)
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    manifest = {
        "inputs": [
            {"name": n, "shape": list(shape_of(a))} for n, a in zip(_io_names(fn, "arg"), fn.args)
        ],
        "outputs": [
            {"name": n, "shape": list(shape_of(v))}
            for n, v in zip(_io_names(fn, "res"), ret.arguments)
        ],
        "kernels": manifest_kernels,
        # kernels run one after another: the largest user workspace one launch needs
        "workspace_bytes_max": max((k["workspace_bytes"] for k in manifest_kernels), default=0),
        "fallback": plan.uncovered,
        "full_model_on_npu": plan.covered,
        # a run-time batch: shapes above are one sample's; af_run_model_batch takes lo..hi
        "batch": batch.report() if (batch := module_batch(module)) else None,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def workspace_bytes(kernel: ac.KernelOp) -> int:
    """Bytes of user workspace (GM scratch beyond the library's system workspace) one launch
    of ``kernel`` needs for its IR tiling: im2col slices of convolutions, the score and
    ``p v`` blocks of attention; 0 for kernels without one."""
    return kernel.tiling_values().get("workspaceElems", 0) * 4


def _op_list(ops: list[Operation]) -> str:  # pragma: no cover - debugging aid
    return ", ".join(o.name for o in ops)
