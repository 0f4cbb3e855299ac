/* Hand-written stand-in for generated code; see model.h. */
#include "afrt.h"
#include "model.h"

#include <stdio.h>

struct af_model {
    float *weights; /* W [4, 3] at offset 0, b [3] at offset 64 bytes */
};

static char af_error_[256];
static const char *const in_names[] = {"x", "ids"};
static const char *const out_names[] = {"y", "a\"b"};
static const int64_t in_shapes[2][2] = {{2, 4}, {3, 0}};
static const int64_t out_shapes[2][2] = {{2, 3}, {3, 0}};
static const int in_ranks[] = {2, 1}, out_ranks[] = {2, 1};
static const int in_dtypes[] = {1, 7}, out_dtypes[] = {1, 7};
#define WEIGHT_BYTES 76

int af_num_inputs(void) { return 2; }
int af_num_outputs(void) { return 2; }
const char *af_input_name(int i) { return i >= 0 && i < 2 ? in_names[i] : NULL; }
const char *af_output_name(int i) { return i >= 0 && i < 2 ? out_names[i] : NULL; }
int af_input_rank(int i) { return i >= 0 && i < 2 ? in_ranks[i] : -1; }
int af_output_rank(int i) { return i >= 0 && i < 2 ? out_ranks[i] : -1; }
const int64_t *af_input_shape(int i) { return i >= 0 && i < 2 ? in_shapes[i] : NULL; }
const int64_t *af_output_shape(int i) { return i >= 0 && i < 2 ? out_shapes[i] : NULL; }
int af_input_dtype(int i) { return i >= 0 && i < 2 ? in_dtypes[i] : -1; }
int af_output_dtype(int i) { return i >= 0 && i < 2 ? out_dtypes[i] : -1; }
const char *af_last_error(void) { return af_error_; }

af_model *af_create(const char *weights_path, int num_threads) {
    af_error_[0] = '\0';
    afrt_set_num_threads(num_threads);
    FILE *f = fopen(weights_path, "rb");
    if (!f) {
        snprintf(af_error_, sizeof af_error_, "%s: cannot open", weights_path);
        return NULL;
    }
    af_model *m = (af_model *)calloc(1, sizeof *m);
    m->weights = (float *)calloc(1, WEIGHT_BYTES + 4);
    const size_t got = fread(m->weights, 1, WEIGHT_BYTES + 4, f);
    fclose(f);
    if (got != WEIGHT_BYTES) {
        snprintf(af_error_, sizeof af_error_, "%s: expected %d bytes, got %zu", weights_path,
                 WEIGHT_BYTES, got);
        free(m->weights);
        free(m);
        return NULL;
    }
    return m;
}

static void bias_relu(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1, int64_t ld) {
    const float *b = (const float *)ctx;
    (void)batch;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const float v = out[r * ld + c] + b[c];
            out[r * ld + c] = v > 0.0f ? v : 0.0f;
        }
}

int af_run(af_model *m, const void *const *inputs, void *const *outputs) {
    if (!m) {
        snprintf(af_error_, sizeof af_error_, "af_run: model is NULL");
        return 1;
    }
    const float *x = (const float *)inputs[0];
    const int64_t *ids = (const int64_t *)inputs[1];
    float *y = (float *)outputs[0];
    int64_t *z = (int64_t *)outputs[1];
    afrt_epilogue epi = {bias_relu, m->weights + 16};
    afrt_matmul_f32(1, 2, 3, 4, 1.0f, x, 4, 0, 0, m->weights, 3, 0, 0, 0.0f, y, 3, 0, epi);
    for (int i = 0; i < 3; ++i) z[i] = ids[i] * 2 + 1;
    return 0;
}

void af_destroy(af_model *m) {
    if (!m) return;
    free(m->weights);
    free(m);
}
