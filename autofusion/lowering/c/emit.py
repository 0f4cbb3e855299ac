"""``emit_model``: write model.c, model.h and weights.bin for a module (see afrt_model_api.md)."""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from autofusion.dialects import nn

MODEL_H = """\
/* model.h - API of a model compiled by autofusion (see afrt_model_api.md). */
#ifndef AF_MODEL_H
#define AF_MODEL_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_model af_model; /* opaque */

int af_num_inputs(void);
int af_num_outputs(void);
const char *af_input_name(int i);  /* the ONNX name, NUL-terminated */
const char *af_output_name(int i);
int af_input_rank(int i);
int af_output_rank(int i);
const int64_t *af_input_shape(int i);
const int64_t *af_output_shape(int i);
int af_input_dtype(int i); /* ONNX TensorProto enum: 1 float, 7 int64, 9 bool, ... */
int af_output_dtype(int i);

/* af_run's results; on failure af_last_error() (per thread) says what went wrong */
#define AF_OK 0
#define AF_ERR_ARGUMENT 1 /* a NULL model, inputs or outputs pointer */
#define AF_ERR_INDEX 2    /* a run-time index (Gather indices, ...) out of range */
#define AF_ERR_DIVZERO 3  /* an integer Div / Mod by zero in run-time data */

af_model *af_create(const char *weights_path, int num_threads);
int af_default_threads(void);  /* the count af_create uses for num_threads <= 0 (0: all cores) */
int af_num_threads(void);      /* the thread count the library currently runs with */
const char *af_last_error(void);
int af_run(af_model *m, const void *const *inputs, void *const *outputs);
void af_destroy(af_model *m);

/* Per-kernel profiling, off by default. The counters belong to the library (shared by every
 * model created from it): af_profile_enable(1), run, then read one slot per kernel call. */
void af_profile_enable(int on);
void af_profile_reset(void);
int af_profile_count(void);            /* kernel calls per run (slots) */
const char *af_profile_kernel(int i);  /* the kernel's C function, e.g. "k15_conv_add_relu" */
const char *af_profile_pattern(int i); /* its fusion pattern, e.g. "conv_add_relu" ("" if none) */
const char *af_profile_origins(int i); /* the ONNX nodes it computes, comma-separated */
double af_profile_seconds(int i);      /* seconds inside it since the last reset */
long long af_profile_calls(int i);     /* calls since the last reset */

#ifdef __cplusplus
}
#endif
#endif /* AF_MODEL_H */
"""


def is_lowered(module: ModuleOp) -> bool:
    """No nn/fusion/bufferization op and no tensor-typed function left."""
    for op in module.walk():
        if isinstance(op, nn.TensorOp) or op.name.startswith(("fusion.", "bufferization.")):
            return False
        if isinstance(op, func.FuncOp) and any(
            isinstance(t, TensorType) for t in (*op.function_type.inputs, *op.function_type.outputs)
        ):
            return False
    return True


def ensure_lowered(ctx: Context | None, module: ModuleOp) -> None:
    """Run the C lowering pipeline if the module still holds nn/fusion ops."""
    if is_lowered(module):
        return
    from autofusion.lowering.c.convert_nn_to_buffers import ConvertNNToBuffers
    from autofusion.lowering.c.lower_nn_to_loops import LowerNNToLoops

    ctx = ctx or Context()
    ConvertNNToBuffers().apply(ctx, module)
    LowerNNToLoops().apply(ctx, module)


def emit_model(module: ModuleOp, out_dir: Path) -> None:
    from autofusion.lowering.c.printer import print_c

    ensure_lowered(None, module)
    text, weights = print_c(module)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "model.c").write_text(text)
    (out_dir / "model.h").write_text(MODEL_H)
    weights.write(out_dir / "weights.bin")
