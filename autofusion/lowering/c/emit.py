"""``emit_model``: write model.c, model.h and weights.bin for a module (see afrt_model_api.md)."""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from autofusion.dialects import nn
from autofusion.errors import AutofusionError

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
const int64_t *af_input_shape(int i); /* -1 for a run-time size: see af_input_shape_at */
const int64_t *af_output_shape(int i);
int af_input_dtype(int i); /* ONNX TensorProto enum: 1 float, 7 int64, 9 bool, ... */
int af_output_dtype(int i);

/* af_run's results; on failure af_last_error() (per thread) says what went wrong */
#define AF_OK 0
#define AF_ERR_ARGUMENT 1 /* a NULL model, inputs or outputs pointer; a symbol out of range */
#define AF_ERR_INDEX 2    /* a run-time index (Gather indices, ...) out of range */
#define AF_ERR_DIVZERO 3  /* an integer Div / Mod by zero in run-time data */
#define AF_ERR_NOMEM 4    /* a kernel could not allocate its scratch memory; outputs unspecified */

af_model *af_create(const char *weights_path, int num_threads);
int af_default_threads(void);  /* the count af_create uses for num_threads <= 0 (0: all cores) */
int af_num_threads(void);      /* the thread count the library currently runs with */
int af_threads_active(void);  /* how many of them regions use now: fewer while workers start late */
void af_set_thread_lag_us(double microseconds); /* the lateness that drops a worker (default 50) */
const char *af_last_error(void);
int af_run(af_model *m, const void *const *inputs, void *const *outputs);
void af_destroy(af_model *m);

/* Run-time batch (docs/dynamic.md). A library built for a batch symbol (a batch-separable
 * model) serves every batch in [af_batch_min(), af_batch_max()]: the inputs and outputs with
 * af_*_batched(i) == 1 hold `batch` samples of the shape af_*_shape(i) reports (dim 0 is 1),
 * one after another; the others are shared by every sample. af_run_batch runs the graph once
 * per sample. A library with a fixed batch has symbol "", range 1..1 and nothing batched. A
 * batch outside the range is AF_ERR_ARGUMENT with a message in af_last_error(). */
#define AF_HAS_RUN_BATCH 1
const char *af_batch_symbol(void);
int64_t af_batch_min(void);
int64_t af_batch_max(void);
int af_input_batched(int i);
int af_output_batched(int i);
int af_run_batch(af_model *m, int64_t batch, const void *const *inputs, void *const *outputs);

/* Run-time sizes (docs/dynamic.md, "One build for every shape"). A library built from a
 * symbolic module takes af_num_symbols() size symbols (e.g. batch, seq), each in its range
 * [af_symbol_min(k), af_symbol_max(k)]; af_*_shape(i) gives -1 for a dim that depends on them.
 * af_*_dim_symbol(i, d) is k when dim d is exactly symbol k, else -1 (static, or an expression
 * such as 12*seq). af_*_shape_at(i, symbols, dims) writes tensor i's sizes for the symbol
 * values `symbols` (one per symbol, in order) into dims[0 .. rank-1]; 0, or -1 for a bad i or
 * a NULL pointer (it does not check ranges). af_run_sym runs with those values: each is
 * checked against its range first (AF_ERR_ARGUMENT, af_last_error() naming the symbol, value
 * and range); inputs and outputs have the sizes af_*_shape_at gives. af_run refuses a
 * symbolic library (AF_ERR_ARGUMENT); in a static library af_num_symbols() is 0, every
 * dim_symbol is -1, and af_run_sym (symbols may be NULL) is af_run. */
#define AF_HAS_RUN_SYM 1
int af_num_symbols(void);
const char *af_symbol_name(int k);
int64_t af_symbol_min(int k);
int64_t af_symbol_max(int k);
int af_input_dim_symbol(int i, int d);
int af_output_dim_symbol(int i, int d);
int af_input_shape_at(int i, const int64_t *symbols, int64_t *dims);
int af_output_shape_at(int i, const int64_t *symbols, int64_t *dims);
int af_run_sym(af_model *m, const int64_t *symbols, const void *const *inputs,
               void *const *outputs);

/* Per-kernel profiling, off by default. The counters belong to the library (shared by every
 * model created from it): af_profile_enable(1), run, then read one slot per kernel call.
 * af_profile_enable(2) times the calling thread's on-CPU time instead of the wall clock
 * (Linux; elsewhere wall time): with OpenMP's passive wait policy, a kernel's share of the
 * run time that its thread spends computing, not waiting for the others. */
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


def first_unlowered(module: ModuleOp) -> str | None:
    """The first op the C printer cannot read (an nn/fusion/bufferization op, else a function
    still on tensors), described for a message; None when the module is lowered."""
    for op in module.walk():
        if isinstance(op, nn.TensorOp) or op.name.startswith(("fusion.", "bufferization.")):
            fn = op.parent_op()
            while fn is not None and not isinstance(fn, func.FuncOp):
                fn = fn.parent_op()
            where = f" in @{fn.sym_name.data}" if isinstance(fn, func.FuncOp) else ""
            return f"op {op.name}{where}"
    for op in module.walk():
        if isinstance(op, func.FuncOp) and any(
            isinstance(t, TensorType) for t in (*op.function_type.inputs, *op.function_type.outputs)
        ):
            return f"func.func @{op.sym_name.data} (it takes or returns tensors)"
    return None


def check_lowered(module: ModuleOp, lowering: tuple[str, ...]) -> None:
    """Raise ``AutofusionError`` if the module is not lowered for the C printer."""
    what = first_unlowered(module)
    if what is not None:
        raise AutofusionError(
            f"c target: {what} is not lowered; the c target only prints lowered IR: "
            f"run -p '{','.join(lowering)}' first"
        )


def bake_default_threads(model_c: Path, threads: int) -> None:
    """Prepend ``#define AF_DEFAULT_THREADS threads`` to model.c (which otherwise defaults
    it to 0, all cores), so a plain ``af_create(path, 0)`` of this build uses ``threads``."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise AutofusionError(f"threads: expected a positive integer, got {threads!r}")
    text = model_c.read_text()
    model_c.write_text(f"#define AF_DEFAULT_THREADS {threads}\n{text}")


def emit_model(module: ModuleOp, out_dir: Path) -> None:
    """Print a lowered module: model.c, model.h and weights.bin in ``out_dir``."""
    from autofusion.lowering.c.printer import print_c

    text, weights = print_c(module)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "model.c").write_text(text)
    (out_dir / "model.h").write_text(MODEL_H)
    weights.write(out_dir / "weights.bin")
