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
    out += _print_model_run(fn, plan, {k.sym_name.data: k for k in kernels})
    return "\n".join(out) + "\n"


def runtime_sizes(kernel: ac.KernelOp) -> dict[str, tuple[int, int]]:
    """The kernel's run-time sizes and their ranges (empty: compile-time tiling)."""
    inputs = kernel.tiling.input_values()
    return {r: (1, inputs[r]) for r in kernel.tiling.runtime_names()}


def _print_model_run(fn: func.FuncOp, plan: HostPlan, kernels: dict[str, ac.KernelOp]) -> list[str]:
    n_in = len(fn.args)
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    out = [
        "// Run the whole model: host input buffers in, host output buffers out (float32,",
        "// sizes in manifest.json). weights: the contents of weights.bin.",
        'extern "C" int af_run_model(const void* weights, const void* const* inputs, '
        "void* const* outputs)",
        "{",
    ]
    if not plan.covered:
        listed = comment_safe(", ".join(sorted(set(plan.uncovered))))
        out += [
            f"    // Not every op of the model has an Ascend C lowering: {listed}.",
            "    (void)weights; (void)inputs; (void)outputs;",
            '    std::fprintf(stderr, "af_run_model: the model has ops without an Ascend C '
            'lowering; "',
            '                 "run the kernels one by one (af_run_<kernel>)\\n");',
            "    return 1;",
            "}",
        ]
        return out
    nbuf = len(plan.sizes)
    out.append(
        f"    static const size_t kBytes[{nbuf}] = {{{', '.join(f'{s}u' for s in plan.sizes)}}};"
    )
    out.append(f"    void* buf[{nbuf}] = {{}};")
    out.append(f"    for (int i = 0; i < {nbuf}; i++) {{")
    out.append("        AF_ACL_CHECK(aclrtMalloc(&buf[i], kBytes[i], ACL_MEM_MALLOC_HUGE_FIRST));")
    out.append("    }")
    out.append("    const unsigned char* w = static_cast<const unsigned char*>(weights);")
    for idx, off, nbytes in plan.weights:
        out.append(
            f"    AF_ACL_CHECK(aclrtMemcpy(buf[{idx}], kBytes[{idx}], w + {off}u, "
            f"{nbytes}u, ACL_MEMCPY_HOST_TO_DEVICE));"
        )
    out.append("    (void)w;")
    for i in range(n_in):
        out.append(
            f"    AF_ACL_CHECK(aclrtMemcpy(buf[{i}], kBytes[{i}], inputs[{i}], kBytes[{i}], "
            "ACL_MEMCPY_HOST_TO_DEVICE));"
        )
    for op in fn.body.block.ops:
        if isinstance(op, ac.LaunchOp):
            vals = [plan.values[v] for v in [*op.inputs, *op.outputs]]
            name = op.kernel.root_reference.data
            out.append(f"    {{  // {name}")
            out.append(f"        void* args[] = {{{', '.join(f'buf[{v}]' for v in vals)}}};")
            kernel = kernels[name]
            # the model's own shapes: run-time sizes at their upper bounds
            sizes = "".join(f", {hi}u" for _, hi in runtime_sizes(kernel).values())
            out.append(f"        if (af_run_{name}(args{sizes}) != 0) return 1;")
            out.append("    }")
    for j, v in enumerate(ret.arguments):
        b = plan.values[v]
        out.append(
            f"    AF_ACL_CHECK(aclrtMemcpy(outputs[{j}], kBytes[{b}], buf[{b}], "
            f"kBytes[{b}], ACL_MEMCPY_DEVICE_TO_HOST));"
        )
    out.append(f"    for (int i = 0; i < {nbuf}; i++) {{")
    out.append("        AF_ACL_CHECK(aclrtFree(buf[i]));")
    out.append("    }")
    out.append("    return 0;")
    out.append("}")
    return out


def print_main(fn: func.FuncOp, plan: HostPlan) -> str:
    """``host/main.cpp``: ``model weights.bin in0.bin ... out0.bin ...`` (raw float32)."""
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    n_in, n_out = len(fn.args), len(ret.arguments)
    in_sizes = [plan.sizes[i] for i in range(n_in)]
    out_sizes = [max(4, numel(shape_of(v)) * 4) for v in ret.arguments]
    return f"""{HEADER}// Usage: model weights.bin <{n_in} input files> <{n_out} output files> (raw float32).
#include <cstdio>
#include <vector>

extern "C" int af_init(int deviceId);
extern "C" int af_finalize(void);
extern "C" int af_run_model(const void* weights, const void* const* inputs, void* const* outputs);

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
    const long inBytes[] = {{{", ".join(str(s) for s in in_sizes) or "0"}}};
    const long outBytes[] = {{{", ".join(str(s) for s in out_sizes) or "0"}}};
    if (argc != {2 + n_in + n_out}) {{
        std::fprintf(stderr, "usage: %s weights.bin <{n_in} inputs> <{n_out} outputs>\\n", argv[0]);
        return 2;
    }}
    std::vector<unsigned char> weights;
    if (!ReadFile(argv[1], weights, -1)) {{ std::fprintf(stderr, "cannot read %s\\n", argv[1]); return 1; }}
    std::vector<std::vector<unsigned char>> in({n_in}), out({n_out});
    std::vector<const void*> inPtr;
    std::vector<void*> outPtr;
    for (int i = 0; i < {n_in}; i++) {{
        if (!ReadFile(argv[2 + i], in[i], inBytes[i])) {{ std::fprintf(stderr, "cannot read %s (expected %ld bytes)\\n", argv[2 + i], inBytes[i]); return 1; }}
        inPtr.push_back(in[i].data());
    }}
    for (int j = 0; j < {n_out}; j++) {{
        out[j].resize(static_cast<size_t>(outBytes[j]));
        outPtr.push_back(out[j].data());
    }}
    if (af_init(0) != 0) return 1;
    int rc = af_run_model(weights.data(), inPtr.data(), outPtr.data());
    if (af_finalize() != 0) return 1;
    if (rc != 0) return 1;
    for (int j = 0; j < {n_out}; j++) {{
        FILE* f = std::fopen(argv[2 + {n_in} + j], "wb");
        if (f == nullptr || std::fwrite(out[j].data(), 1, out[j].size(), f) != out[j].size()) {{
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
    (out / "host" / "main.cpp").write_text(print_main(fn, plan))
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
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def workspace_bytes(kernel: ac.KernelOp) -> int:
    """Bytes of user workspace (GM scratch beyond the library's system workspace) one launch
    of ``kernel`` needs for its IR tiling: im2col slices of convolutions, the score and
    ``p v`` blocks of attention; 0 for kernels without one."""
    return kernel.tiling_values().get("workspaceElems", 0) * 4


def _op_list(ops: list[Operation]) -> str:  # pragma: no cover - debugging aid
    return ", ".join(o.name for o in ops)
