// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A fuse-conv-chain kernel (depthwise conv, Relu, 1x1 conv, residual add) lowers to one
// clib.dwpw call (afrt_dwpw_f32): the depthwise and pointwise params, the Relu as the clamp
// [0, inf), the residual add as the pointwise conv's epilogue: afrt.h's built-in clamp epilogue
// (no bounds, residual %r), which the GEMM core applies in registers. No buffer for the
// intermediate.
func.func @main(%x: tensor<1x8x7x5xf32>, %wd: tensor<8x1x3x3xf32>, %wp: tensor<4x8x1x1xf32>, %r: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  %k = fusion.kernel "chain_conv_relu_conv_add" ["dw", "relu", "pw", "add"] (%x, %wd, %wp, %r) : (tensor<1x8x7x5xf32>, tensor<8x1x3x3xf32>, tensor<4x8x1x1xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  ^bb0(%a: tensor<1x8x7x5xf32>, %b: tensor<8x1x3x3xf32>, %c: tensor<4x8x1x1xf32>, %e: tensor<1x4x4x3xf32>):
    %d = nn.conv %a, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x7x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x3xf32>
    %m = nn.relu %d : (tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x3xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x3xf32>
    %y = nn.add %p, %e : (tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
    fusion.yield %y : tensor<1x4x4x3xf32>
  }
  func.return %k : tensor<1x4x4x3xf32>
}
// CHECK-NOT: _epilogue(
// CHECK-LABEL: func.func private @k0_chain_conv_relu_conv_add(
// CHECK-NOT:     memref.alloc
// CHECK:         %[[FN:.*]], %[[CTX:.*]] = "clib.clamp_epilogue"(%3) <{res_stride = 48 : i64, res_ld = 12 : i64, lo = 0xff800000 : f32, hi = 0x7f800000 : f32, operandSegmentSizes = array<i32: 1, 0, 0>}>
// CHECK-NEXT:    "clib.dwpw"(%0, %1, %2, %4, %[[FN]], %[[CTX]]) <{params = array<i64: 1, 8, 7, 5, 8, 3, 3, 4, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8>, pw_params = array<i64: 1, 8, 4, 3, 4, 1, 1, 4, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1>, lo = 0.000000e+00 : f64, hi = 0x7ff0000000000000 : f64
// CHECK-NOT:     clib.conv2d
// CHECK:         func.return

// C-LABEL: static void k0_chain_conv_relu_conv_add(
// C:         afrt_epi_clamp [[CTX:v[0-9]+]][1] = {{[{][{]}}v3, INT64_C(48), INT64_C(12), -INFINITY, INFINITY}};
// C-NEXT:    { const afrt_conv_params pd_ = {INT64_C(1), INT64_C(8), INT64_C(7), INT64_C(5), INT64_C(8), INT64_C(3), INT64_C(3), INT64_C(4), INT64_C(3), INT64_C(2), INT64_C(2),
// C-NEXT:      const afrt_conv_params pp_ = {INT64_C(1), INT64_C(8), INT64_C(4), INT64_C(3), INT64_C(4), INT64_C(1), INT64_C(1),
// C-NEXT:      (void)afrt_dwpw_f32(v0, v1, NULL, 0x0.0p+0f, INFINITY, v2, NULL, v4, &pd_, &pp_, (afrt_epilogue){afrt_epi_clamp_fn, (void *)[[CTX]]}); }
// C-NOT:     afrt_conv2d_f32
