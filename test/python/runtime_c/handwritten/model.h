/* A hand-written model implementing the compiled-model C API (afrt_model_api.md), used to
 * test the runtime's build, loader, cache and sanitizer driver without the C lowering.
 *
 *   inputs:  "x"      float32 [2, 4]
 *            "ids"    int64   [3]
 *   outputs: "y"      float32 [2, 3] = relu(x @ W + b)     (W [4, 3], b [3] from weights.bin)
 *            "a\"b"   int64   [3]    = ids * 2 + 1          (a hostile name, escaped)
 */
#ifndef MODEL_H
#define MODEL_H
#include <stdint.h>

typedef struct af_model af_model;

int af_num_inputs(void);
int af_num_outputs(void);
const char *af_input_name(int i);
const char *af_output_name(int i);
int af_input_rank(int i);
int af_output_rank(int i);
const int64_t *af_input_shape(int i);
const int64_t *af_output_shape(int i);
int af_input_dtype(int i);
int af_output_dtype(int i);
af_model *af_create(const char *weights_path, int num_threads);
const char *af_last_error(void);
int af_run(af_model *m, const void *const *inputs, void *const *outputs);
void af_destroy(af_model *m);

#endif
