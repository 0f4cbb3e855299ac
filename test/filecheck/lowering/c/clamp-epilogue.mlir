// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A conv's epilogue that is a residual Add then a Relu is afrt.h's built-in clamp epilogue
// (residual, lo = 0, no upper bound): no generated epilogue function.
func.func @main(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %k = fusion.kernel "conv_add_relu" ["conv", "add", "relu"] (%x, %w, %r) : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>, tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%a: tensor<1x8x6x6xf32>, %b: tensor<16x8x1x1xf32>, %e: tensor<1x16x6x6xf32>):
    %c = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32>
    %s = nn.add %e, %c : (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    %y = nn.relu %s : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    fusion.yield %y : tensor<1x16x6x6xf32>
  }
  func.return %k : tensor<1x16x6x6xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_conv_add_relu(
// CHECK:         %[[FN:.*]], %[[CTX:.*]] = "clib.clamp_epilogue"(%2) <{res_stride = 576 : i64, res_ld = 36 : i64, lo = 0.000000e+00 : f32, hi = 0x7f800000 : f32, operandSegmentSizes = array<i32: 1, 0, 0>}>
// CHECK-NEXT:    "clib.conv2d"(%0, %1, %3, %[[FN]], %[[CTX]])

// C-NOT:     _epilogue(
// C-LABEL: static void k0_conv_add_relu(
// C:         afrt_epi_clamp [[CTX:v[0-9]+]][1] = {{[{][{]}}v2, INT64_C(576), INT64_C(36), 0x0.0p+0f, INFINITY}};
// C:         afrt_conv2d_f32(v0, v1, NULL, v3, &p_, s_, (afrt_epilogue){afrt_epi_clamp_fn, (void *)[[CTX]]}); }

// -----

// A batched MatMul + Clip(0, 6) with a residual shared by the batch (stride 0).
func.func @main(%a: tensor<2x4x8xf32>, %b: tensor<2x8x32xf32>, %r: tensor<4x32xf32>) -> tensor<2x4x32xf32> {
  %k = fusion.kernel "matmul_add_clip" ["mm", "add", "clip"] (%a, %b, %r) : (tensor<2x4x8xf32>, tensor<2x8x32xf32>, tensor<4x32xf32>) -> tensor<2x4x32xf32> {
  ^bb0(%p: tensor<2x4x8xf32>, %q: tensor<2x8x32xf32>, %e: tensor<4x32xf32>):
    %m = nn.matmul %p, %q : (tensor<2x4x8xf32>, tensor<2x8x32xf32>) -> tensor<2x4x32xf32>
    %s = nn.add %m, %e : (tensor<2x4x32xf32>, tensor<4x32xf32>) -> tensor<2x4x32xf32>
    %y = nn.clip %s {min = 0.0 : f32, max = 6.0 : f32} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    fusion.yield %y : tensor<2x4x32xf32>
  }
  func.return %k : tensor<2x4x32xf32>
}
// CHECK-NOT:     _epilogue(
// CHECK-LABEL: func.func private @k0_matmul_add_clip(
// CHECK:         "clib.clamp_epilogue"(%2) <{res_stride = 0 : i64, res_ld = 32 : i64, lo = 0.000000e+00 : f32, hi = 6.000000e+00 : f32, operandSegmentSizes = array<i32: 1, 0, 0>}>

// C-NOT:     _epilogue(
// C-LABEL: static void k0_matmul_add_clip(
// C:         afrt_epi_clamp [[CTX:v[0-9]+]][1] = {{[{][{]}}v2, INT64_C(0), INT64_C(32), 0x0.0p+0f, 0x1.8{{0*}}p+2f}};

// -----

// Must not fire: the added tensor broadcasts over the columns (a per-channel shift, not a
// residual), so the kernel keeps a generated epilogue.
func.func @main(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32> {
  %k = fusion.kernel "conv_shift_relu" ["conv", "add", "relu"] (%x, %w, %r) : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%a: tensor<1x8x6x6xf32>, %b: tensor<16x8x1x1xf32>, %e: tensor<1x16x1x1xf32>):
    %c = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x6x6xf32>
    %s = nn.add %c, %e : (tensor<1x16x6x6xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32>
    %y = nn.relu %s : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
    fusion.yield %y : tensor<1x16x6x6xf32>
  }
  func.return %k : tensor<1x16x6x6xf32>
}
// CHECK-LABEL: func.func private @k0_conv_shift_relu_epilogue(
// CHECK-LABEL: func.func private @k0_conv_shift_relu(
// CHECK-NOT:     clib.clamp_epilogue
// CHECK:         clib.func_ref @k0_conv_shift_relu_epilogue

// C-LABEL: static AFRT_WIDE_VEC void k0_conv_shift_relu_epilogue(
// C-LABEL: static void k0_conv_shift_relu(
// C-NOT:     afrt_epi_clamp
// C:         (afrt_epilogue){k0_conv_shift_relu_epilogue, (void *)
