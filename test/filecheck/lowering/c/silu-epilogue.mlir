// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A conv's epilogue that is SiLU, sigmoid(c) * c, is afrt.h's built-in SiLU epilogue: no
// generated epilogue function.
func.func @main(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32> {
  %k = fusion.kernel "conv_sigmoid_mul" ["conv", "sigmoid", "mul"] (%x, %w) : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%a: tensor<1x8x6x6xf32>, %b: tensor<16x8x1x1xf32>):
    %c = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32>
    %s = nn.sigmoid %c : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    %y = nn.mul %s, %c : (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    fusion.yield %y : tensor<1x16x6x6xf32>
  }
  func.return %k : tensor<1x16x6x6xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_conv_sigmoid_mul(
// CHECK:         %[[FN:.*]], %[[CTX:.*]] = "clib.silu_epilogue"() <{gate = false}>
// CHECK-NEXT:    "clib.conv2d"(%0, %1, %2, %[[FN]], %[[CTX]])

// C-NOT:     _epilogue(
// C-LABEL: static void k0_conv_sigmoid_mul(
// C:         afrt_epi_silu [[CTX:v[0-9]+]][1] = {{[{][{]}}0}};
// C:         afrt_conv2d_f32(v0, v1, NULL, v2, &p_, s_, (afrt_epilogue){afrt_epi_silu_fn, (void *)[[CTX]]}); }

// -----

// A MatMul then a sigmoid alone (an SE block's gate): the built-in one with gate = 1.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x32xf32>) -> tensor<4x32xf32> {
  %k = fusion.kernel "matmul_sigmoid" ["mm", "sigmoid"] (%a, %b) : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8x32xf32>):
    %m = nn.matmul %p, %q : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
    %y = nn.sigmoid %m : (tensor<4x32xf32>) -> tensor<4x32xf32>
    fusion.yield %y : tensor<4x32xf32>
  }
  func.return %k : tensor<4x32xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_matmul_sigmoid(
// CHECK:         "clib.silu_epilogue"() <{gate = true}>
// C:         afrt_epi_silu [[CTX:v[0-9]+]][1] = {{[{][{]}}1}};

// -----

// Must not fire: sigmoid(c) * c * 2 is more than SiLU, so the kernel keeps a generated
// epilogue.
func.func @main(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32> {
  %k = fusion.kernel "conv_silu_scale" ["conv", "sigmoid", "mul", "mul2"] (%x, %w) : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%a: tensor<1x8x6x6xf32>, %b: tensor<16x8x1x1xf32>):
    %c = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32>
    %s = nn.sigmoid %c : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    %t = nn.mul %c, %s : (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    %y = nn.add %t, %t : (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    fusion.yield %y : tensor<1x16x6x6xf32>
  }
  func.return %k : tensor<1x16x6x6xf32>
}
// CHECK-LABEL: func.func private @k0_conv_silu_scale_epilogue(
// CHECK-LABEL: func.func private @k0_conv_silu_scale(
// CHECK-NOT:     clib.silu_epilogue
// CHECK:         clib.func_ref @k0_conv_silu_scale_epilogue

// C-LABEL: static AFRT_WIDE_VEC void k0_conv_silu_scale_epilogue(
// C-LABEL: static void k0_conv_silu_scale(
// C-NOT:     afrt_epi_silu
// C:         (afrt_epilogue){k0_conv_silu_scale_epilogue, (void *)
