// RUN: autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops | filecheck %s --check-prefix=IRCHECK
// RUN: autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops -t c | filecheck %s --check-prefix=CCHECK

// Integer Div and Mod print as clib.int_div (rem = 0 / 1) and then as af_sdiv_ / af_srem_,
// which never trap: a zero divisor records a fault of its own kind (division or modulo) so
// that af_run's message names the op that failed ("integer modulo by zero" for Mod).
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = nn.div %a, %b {onnx.origins = ["dv"]} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = nn.mod %a, %b {fmod = 1 : i64, onnx.origins = ["md"]} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// IRCHECK:      clib.int_div %{{.*}}, %{{.*}} rem 0 : i64 site "Div node 'dv'" : i32, i32 -> i32
// IRCHECK:      clib.int_div %{{.*}}, %{{.*}} rem 1 : i64 site "Mod node 'md'" : i32, i32 -> i32

// CCHECK:      #define AF_FAULT_DIVZERO 1
// CCHECK-NEXT: #define AF_FAULT_MODZERO 2
// CCHECK:      static inline int64_t af_sdiv_(int64_t a, int64_t b, int site, af_fault *f) {
// CCHECK-NEXT:   if (__builtin_expect(b == 0, 0)) {
// CCHECK-NEXT:     af_fault_divzero_(f, site, AF_FAULT_DIVZERO);
// CCHECK:      static inline int64_t af_srem_(int64_t a, int64_t b, int site, af_fault *f) {
// CCHECK-NEXT:   if (__builtin_expect(b == 0, 0)) {
// CCHECK-NEXT:     af_fault_divzero_(f, site, AF_FAULT_MODZERO);
// CCHECK:      const int32_t {{v[0-9]+}} = (int32_t)af_sdiv_((int64_t){{v[0-9]+}}, (int64_t){{v[0-9]+}}, 0, af_f);
// CCHECK:      const int32_t {{v[0-9]+}} = (int32_t)af_srem_((int64_t){{v[0-9]+}}, (int64_t){{v[0-9]+}}, 1, af_f);
// CCHECK:      static const char *const af_guard_sites[2] = {"Div node \047dv\047", "Mod node \047md\047"};
// CCHECK:      if (f.kind != AF_FAULT_INDEX) {
// CCHECK-NEXT:   snprintf(af_error, sizeof af_error, "%s: integer %s by zero", af_guard_sites[f.site], f.kind == AF_FAULT_MODZERO ? "modulo" : "division");
// CCHECK-NEXT:   return AF_ERR_DIVZERO;
