// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s

// The printer: one C function per kernel with restrict pointers, `const` for inputs, an
// OpenMP pragma on the outer loop of a big nest, NaN-propagating ReLU, bool and int64
// tensors, weights as offsets into the weights blob, and model strings only as escaped
// string literals or sanitised comments.
func.func @main(%x: tensor<64x1024xf32> {onnx.name = "in\"put; system(\"x\"); //"}, %m: tensor<64x1024xi1> {onnx.name = "mask"}) -> (tensor<64x1024xf32> {onnx.name = "a\"; system(\"x\"); //"}, tensor<64x1024xi64> {onnx.name = "ids"}) {
  %w = nn.constant dense<1.5> : tensor<1024xf32> {onnx.origins = ["*/ evil \\ ??/ name"]}
  %0 = fusion.kernel "ew" ["a\"; system(\"x\"); //"] (%x, %w, %m) : (tensor<64x1024xf32>, tensor<1024xf32>, tensor<64x1024xi1>) -> tensor<64x1024xf32> {
  ^bb0(%a: tensor<64x1024xf32>, %b: tensor<1024xf32>, %c: tensor<64x1024xi1>):
    %s = nn.mul %a, %b : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
    %r = nn.relu %s : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    %z = nn.where %c, %r, %a : (tensor<64x1024xi1>, tensor<64x1024xf32>, tensor<64x1024xf32>) -> tensor<64x1024xf32>
    fusion.yield %z : tensor<64x1024xf32>
  }
  %1 = nn.cast %m : (tensor<64x1024xi1>) -> tensor<64x1024xi64>
  func.return %0, %1 : tensor<64x1024xf32>, tensor<64x1024xi64>
}

// CHECK:       #include "afrt.h"
// CHECK:       #define AF_WEIGHTS_BYTES ((size_t)4096)
// CHECK:       /* ew: a'; system('x'); // */
// CHECK-NEXT:  static void k1_ew(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const float *restrict [[X:v[0-9]+]], const float *restrict [[W:v[0-9]+]], const bool *restrict [[M:v[0-9]+]], float *restrict [[Y:v[0-9]+]]) {
// The region asks afrt_threads_now() for its thread count and each thread stamps its
// arrival (afrt_arrive_) before the shared loop: fewer threads while workers start late.
// CHECK:         AFRT_OMP(parallel num_threads(afrt_threads_now()))
// CHECK-NEXT:    {
// CHECK-NEXT:      afrt_arrive_();
// CHECK-NEXT:      AFRT_OMP(for schedule(static))
// CHECK-NEXT:      for (int64_t [[I:v[0-9]+]] = 0; [[I]] < 64; ++[[I]]) {
// CHECK-NEXT:        for (int64_t [[J:v[0-9]+]] = 0; [[J]] < 1024; ++[[J]]) {
// CHECK-NEXT:          const bool [[C:v[0-9]+]] = [[M]][[[I]] * 1024 + [[J]]];
// CHECK-NEXT:          const float [[A:v[0-9]+]] = [[X]][[[I]] * 1024 + [[J]]];
// CHECK-NEXT:          const float [[B:v[0-9]+]] = {{v[0-9]+}}[[[J]]];
// CHECK-NEXT:          const float [[P:v[0-9]+]] = [[A]] * [[B]];
// CHECK-NEXT:          const float [[R:v[0-9]+]] = !([[P]] <= 0x0.0p+0f) ? [[P]] : 0x0.0p+0f;
// CHECK-NEXT:          const float [[Z:v[0-9]+]] = [[C]] ? [[R]] : [[A]];
// CHECK-NEXT:          [[Y]][[[I]] * 1024 + [[J]]] = [[Z]];
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:       static void op2_cast(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const bool *restrict {{v[0-9]+}}, int64_t *restrict {{v[0-9]+}}) {
// CHECK:           const int64_t {{v[0-9]+}} = {{v[0-9]+}} ? INT64_C(1) : INT64_C(0);
// One profiling slot per kernel call of @main, named after the kernel:
// CHECK:       #define AF_NPROF 2
// CHECK-NEXT:  static const char *const af_prof_kernel[2] = {"k1_ew", "op2_cast"};
// CHECK:       static void af_graph(af_model *m, const void *const *in, void *const *out) {
// CHECK:         const float *[[WP:v[0-9]+]] = (const float *)(m->weights + 0);
// CHECK-NEXT:    AF_PROF_CALL(0, k1_ew(m->weights, m->scratch, m->scratch_bytes, {{v[0-9]+}}, [[WP]], {{v[0-9]+}}, {{v[0-9]+}}));
// CHECK:         AF_PROF_CALL(1, op2_cast(m->weights, m->scratch, m->scratch_bytes, {{v[0-9]+}}, {{v[0-9]+}}));
// CHECK:       static const char *const af_input_names[2] = {"in\042put; system(\042x\042); //", "mask"};
// CHECK:       static const int af_input_dtypes[2] = {1, 9};
// CHECK:       static const char *const af_output_names[2] = {"a\042; system(\042x\042); //", "ids"};
// CHECK:       static const int af_output_dtypes[2] = {1, 7};
// CHECK-NOT:   system("x")
// CHECK:       af_model *af_create(const char *weights_path, int num_threads) {
