// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A Linear layer's bias then GELU (erf form), a transformer MLP's fc1: afrt.h's built-in GELU
// epilogue with the bias along the columns, no generated epilogue function.
func.func @main(%x: tensor<2x5x8xf32>, %w: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<2x5x32xf32> {
  %k = fusion.kernel "matmul_add_gelu" ["mm", "add", "gelu"] (%x, %w, %b) : (tensor<2x5x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<2x5x32xf32> {
  ^bb0(%p: tensor<2x5x8xf32>, %q: tensor<8x32xf32>, %c: tensor<32xf32>):
    %m = nn.matmul %p, %q : (tensor<2x5x8xf32>, tensor<8x32xf32>) -> tensor<2x5x32xf32>
    %s = nn.add %m, %c : (tensor<2x5x32xf32>, tensor<32xf32>) -> tensor<2x5x32xf32>
    %g = nn.gelu %s {approximate = "none"} : (tensor<2x5x32xf32>) -> tensor<2x5x32xf32>
    fusion.yield %g : tensor<2x5x32xf32>
  }
  func.return %k : tensor<2x5x32xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_matmul_add_gelu(
// CHECK:         %[[FN:.*]], %[[CTX:.*]] = "clib.gelu_epilogue"(%2) : (memref<32xf32>) -> (!clib.ptr, !clib.ptr)
// CHECK:         "clib.matmul"({{.*}}%[[FN]], %[[CTX]])

// C-NOT:     _epilogue(
// C-LABEL: static void k0_matmul_add_gelu(
// C:         afrt_epi_gelu [[CTX:v[0-9]+]][1] = {{[{][{]}}v2}};
// C:         afrt_matmul_f32({{.*}}(afrt_epilogue){afrt_epi_gelu_fn, (void *)[[CTX]]});

// -----

// GELU straight on the MatMul: the built-in one without a bias.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x32xf32>) -> tensor<4x32xf32> {
  %k = fusion.kernel "matmul_gelu" ["mm", "gelu"] (%a, %b) : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8x32xf32>):
    %m = nn.matmul %p, %q : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
    %y = nn.gelu %m {approximate = "none"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
    fusion.yield %y : tensor<4x32xf32>
  }
  func.return %k : tensor<4x32xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_matmul_gelu(
// CHECK:         "clib.gelu_epilogue"() : () -> (!clib.ptr, !clib.ptr)
// C:         afrt_epi_gelu [[CTX:v[0-9]+]][1] = {{[{][{]}}NULL}};

// -----

// Must not fire: a fast-math kernel keeps its generated epilogue (af_fast_erff).
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x32xf32>) -> tensor<4x32xf32> {
  %k = fusion.kernel "matmul_gelu_fast" ["mm", "gelu"] (%a, %b) attributes {fusion.fast_math} : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8x32xf32>):
    %m = nn.matmul %p, %q : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
    %y = nn.gelu %m {approximate = "none"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
    fusion.yield %y : tensor<4x32xf32>
  }
  func.return %k : tensor<4x32xf32>
}
// CHECK-LABEL: func.func private @k0_matmul_gelu_fast_epilogue(
// CHECK-NOT:   clib.gelu_epilogue
// CHECK-LABEL: func.func private @k0_matmul_gelu_fast(
// CHECK-NOT:   clib.gelu_epilogue
// CHECK:       "clib.matmul"
// C-LABEL:     void k0_matmul_gelu_fast_epilogue(
// C:           af_fast_erff(
// C-LABEL:     static void k0_matmul_gelu_fast(
// C-NOT:       afrt_epi_gelu_fn
// C:           afrt_matmul_f32(

// -----

// Must not fire: a bias along the rows (a conv's channels) is not a column bias, so the
// kernel keeps a generated epilogue.
func.func @main(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x1x1xf32>, %c: tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32> {
  %k = fusion.kernel "conv_add_gelu" ["conv", "add", "gelu"] (%x, %w, %c) : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%a: tensor<1x8x6x6xf32>, %b: tensor<16x8x1x1xf32>, %d: tensor<1x16x1x1xf32>):
    %v = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32>
    %s = nn.add %v, %d : (tensor<1x16x6x6xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32>
    %y = nn.gelu %s {approximate = "none"} : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    fusion.yield %y : tensor<1x16x6x6xf32>
  }
  func.return %k : tensor<1x16x6x6xf32>
}
// CHECK-LABEL: func.func private @k0_conv_add_gelu_epilogue(
// CHECK-LABEL: func.func private @k0_conv_add_gelu(
// CHECK-NOT:   clib.gelu_epilogue
// CHECK:       "clib.conv2d"
// C-LABEL:     void k0_conv_add_gelu_epilogue(
// C:           af_erff(
// C-LABEL:     static void k0_conv_add_gelu(
// C-NOT:       afrt_epi_gelu_fn
// C:           afrt_conv2d_f32(
