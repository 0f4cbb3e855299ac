// RUN: autofusion-opt %s -t c | filecheck %s

// A lowered symbolic module (nn.symbols; @main's last arguments are the symbols): kernels
// take the symbols as int64_t arguments, index a flat view with one linearised index
// computed from them, loop to run-time bounds; library params equal to clib.DYNAMIC (-2^63)
// print their dyn operand, in order; a guard checks against a run-time dim; model.h reports
// -1 for a symbolic dim, which dims are which symbol, the sizes for given symbol values, and
// af_run_sym checks each symbol against its range before anything runs. Run end to end by
// test/python/test_symbolic_c.py: y = 4x, u = relu(x W + x) (W = 1/16), t[0, i] = z[i].
builtin.module attributes {nn.symbols = {batch = [#builtin.int<1>, #builtin.int<4>], seq = [#builtin.int<1>, #builtin.int<8>]}} {
  func.func private @k0_scale(%x: memref<?x?x32xf32>, %y: memref<?x?x32xf32>, %b: index {c.symbol = "batch"}, %s: index {c.symbol = "seq"}) attributes {c.pattern = "scale"} {
    %xf = clib.view %x[0 : i64] : memref<?x?x32xf32> -> memref<?xf32>
    %yf = clib.view %y[0 : i64] : memref<?x?x32xf32> -> memref<?xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %two = arith.constant 2.0 : f32
    %rows = arith.muli %b, %s : index
    %n = arith.muli %rows, %c32 : index
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %xf[%i] : memref<?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %yf[%i] : memref<?xf32>
    }
    func.return
  }
  "memref.global"() <{sym_name = "w", type = memref<32x32xf32>, initial_value = dense<6.250000e-02> : tensor<32x32xf32>, sym_visibility = "private"}> : () -> ()
  func.func private @k1_mm(%x: memref<?x?x32xf32>, %u: memref<?x32xf32>, %b: index {c.symbol = "batch"}, %s: index {c.symbol = "seq"}) attributes {c.pattern = "matmul_add_relu"} {
    %x2 = clib.view %x[0 : i64] : memref<?x?x32xf32> -> memref<?x32xf32>
    %w = memref.get_global @w : memref<32x32xf32>
    %m = arith.muli %b, %s : index
    %c32 = arith.constant 32 : index
    %mc = arith.muli %m, %c32 : index
    %fn, %ctx = "clib.clamp_epilogue"(%x2, %mc) <{res_stride = -9223372036854775808 : i64, res_ld = 32 : i64, lo = 0.000000e+00 : f32, hi = 0x7f800000 : f32, operandSegmentSizes = array<i32: 1, 0, 1>}> : (memref<?x32xf32>, index) -> (!clib.ptr, !clib.ptr)
    "clib.matmul"(%x2, %w, %u, %fn, %ctx, %m, %mc) <{params = array<i64: 1, -9223372036854775808, 32, 32, 32, 0, 0, 32, 0, 0, 32, -9223372036854775808>, alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 2>}> : (memref<?x32xf32>, memref<32x32xf32>, memref<?x32xf32>, !clib.ptr, !clib.ptr, index, index) -> ()
    func.return
  }
  func.func private @k2_guard(%z: memref<?xi64>, %t: memref<?x32xf32>, %b: index {c.symbol = "batch"}, %s: index {c.symbol = "seq"}) attributes {c.pattern = "gather"} {
    %tf = clib.view %t[0 : i64] : memref<?x32xf32> -> memref<?xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %s step %c1 {
      %zi = memref.load %z[%i] : memref<?xi64>
      %g = clib.guard_index %zi dim -9223372036854775808 [%s] site "Gather node 'g' (axis 0 of data [seq])" : i64
      %gi = arith.index_cast %g : index to i64
      %gf = arith.sitofp %gi : i64 to f32
      memref.store %gf, %tf[%i] : memref<?xf32>
    }
    func.return
  }
  func.func @main(%x: memref<?x?x32xf32> {onnx.name = "x", c.role = "input", c.shape = #nn.shape<["batch", "seq", "32"]>}, %z: memref<?xi64> {onnx.name = "z", c.role = "input", c.shape = #nn.shape<["seq"]>}, %y: memref<?x?x32xf32> {onnx.name = "y", c.role = "output", c.shape = #nn.shape<["batch", "seq", "32"]>}, %t: memref<?x32xf32> {onnx.name = "t", c.role = "output", c.shape = #nn.shape<["2*batch*seq + 1", "32"]>}, %u: memref<?x32xf32> {onnx.name = "u", c.role = "output", c.shape = #nn.shape<["batch*seq", "32"]>}, %b: index {c.role = "symbol", c.symbol = "batch"}, %s: index {c.role = "symbol", c.symbol = "seq"}) {
    %arena = memref.alloc() {alignment = 64 : i64} : memref<4096xi8>
    %tmp = clib.view %arena[0 : i64] : memref<4096xi8> -> memref<?x?x32xf32>
    func.call @k0_scale(%x, %tmp, %b, %s) : (memref<?x?x32xf32>, memref<?x?x32xf32>, index, index) -> ()
    func.call @k0_scale(%tmp, %y, %b, %s) : (memref<?x?x32xf32>, memref<?x?x32xf32>, index, index) -> ()
    func.call @k1_mm(%x, %u, %b, %s) : (memref<?x?x32xf32>, memref<?x32xf32>, index, index) -> ()
    func.call @k2_guard(%z, %t, %b, %s) : (memref<?xi64>, memref<?x32xf32>, index, index) -> ()
    func.return
  }
}

// CHECK:       static void k0_scale(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const float *restrict [[X:v[0-9]+]], float *restrict [[Y:v[0-9]+]], const int64_t [[B:v[0-9]+]], const int64_t [[S:v[0-9]+]]) {
// CHECK:         const float *[[XF:v[0-9]+]] = (const float *)([[X]]);
// CHECK-NEXT:    float *[[YF:v[0-9]+]] = (float *)([[Y]]);
// CHECK-NEXT:    const int64_t [[R:v[0-9]+]] = [[B]] * [[S]];
// CHECK-NEXT:    const int64_t [[N:v[0-9]+]] = [[R]] * 32;
// CHECK-NEXT:    for (int64_t [[I:v[0-9]+]] = 0; [[I]] < [[N]]; ++[[I]]) {
// CHECK-NEXT:      const float [[V:v[0-9]+]] = [[XF]][[[I]]];
// CHECK-NEXT:      const float [[W:v[0-9]+]] = [[V]] * 0x1.0000000000000p+1f;
// CHECK-NEXT:      [[YF]][[[I]]] = [[W]];
// CHECK:       static void k1_mm(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const float *restrict [[X1:v[0-9]+]], float *restrict [[U:v[0-9]+]], const int64_t [[B1:v[0-9]+]], const int64_t [[S1:v[0-9]+]]) {
// CHECK:         const int64_t [[M:v[0-9]+]] = [[B1]] * [[S1]];
// CHECK-NEXT:    const int64_t [[MC:v[0-9]+]] = [[M]] * 32;
// CHECK-NEXT:    afrt_epi_clamp [[CTX:v[0-9]+]][1] = {{[{][{]}}{{v[0-9]+}}, (int64_t)[[MC]], INT64_C(32), 0x0.0p+0f, INFINITY{{[}][}]}};
// CHECK-NEXT:    afrt_matmul_f32(INT64_C(1), (int64_t)[[M]], INT64_C(32), INT64_C(32), 0x1.0000000000000p+0f, {{v[0-9]+}}, INT64_C(32), INT64_C(0), 0, {{v[0-9]+}}, INT64_C(32), INT64_C(0), 0, 0x0.0p+0f, [[U]], INT64_C(32), (int64_t)[[MC]], (afrt_epilogue){afrt_epi_clamp_fn, (void *)[[CTX]]});
// CHECK:       static void k2_guard(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const int64_t *restrict {{v[0-9]+}}, float *restrict {{v[0-9]+}}, const int64_t {{v[0-9]+}}, const int64_t [[S2:v[0-9]+]], af_fault *af_f) {
// CHECK:           const int64_t {{v[0-9]+}} = af_guard_((int64_t){{v[0-9]+}}, (int64_t)[[S2]], 0, af_f);
// CHECK:       static void af_graph(af_model *m, const int64_t *af_sym, const void *const *in, void *const *out, af_fault *af_f) {
// CHECK:         const int64_t [[MB:v[0-9]+]] = af_sym[0]; /* batch */
// CHECK-NEXT:    (void)[[MB]];
// CHECK-NEXT:    const int64_t [[MS:v[0-9]+]] = af_sym[1]; /* seq */
// CHECK:         AF_PROF_CALL(0, k0_scale(m->weights, m->scratch, m->scratch_bytes, {{v[0-9]+}}, {{v[0-9]+}}, [[MB]], [[MS]]));
// CHECK:       static const int64_t af_input_shape_0[] = {INT64_C(-1), INT64_C(-1), INT64_C(32)};
// CHECK:       static const int64_t af_input_shape_1[] = {INT64_C(-1)};
// CHECK:       static const int64_t af_output_shape_1[] = {INT64_C(-1), INT64_C(32)};
// CHECK:       #define AF_NSYM 2
// CHECK-NEXT:  static const char *const af_symbol_names_[2] = {"batch", "seq"};
// CHECK-NEXT:  static const int64_t af_symbol_min_[2] = {INT64_C(1), INT64_C(1)};
// CHECK-NEXT:  static const int64_t af_symbol_max_[2] = {INT64_C(4), INT64_C(8)};
// CHECK:       static const int af_input_dim_symbol_0[] = {0, 1, -1};
// CHECK:       int af_input_shape_at(int i, const int64_t *s, int64_t *dims) {
// CHECK:         case 0: dims[0] = (s[0]); dims[1] = (s[1]); dims[2] = 32; return 0;
// CHECK:       static const int af_output_dim_symbol_1[] = {-1, -1};
// CHECK:       int af_output_shape_at(int i, const int64_t *s, int64_t *dims) {
// CHECK:         case 1: dims[0] = ((int64_t)2 * s[0] * s[1] + (int64_t)1); dims[1] = 32; return 0;
// CHECK:       static int af_run_impl_(const char *fn, af_model *m, const int64_t *sym, const void *const *inputs, void *const *outputs) {
// CHECK:           if (sym[k] < af_symbol_min_[k] || sym[k] > af_symbol_max_[k]) {
// CHECK-NEXT:        snprintf(af_error, sizeof af_error, "%s: symbol %s = %lld is outside its range %lld..%lld",
// CHECK:         af_graph(m, sym, inputs, outputs, &f);
// CHECK:       int af_run_sym(af_model *m, const int64_t *symbols, const void *const *inputs, void *const *outputs) {
// CHECK:       int af_run(af_model *m, const void *const *inputs, void *const *outputs) {
// CHECK-NEXT:    snprintf(af_error, sizeof af_error, "af_run: this library takes run-time sizes (batch, seq): call af_run_sym with their values");
// CHECK-NEXT:    (void)m;
