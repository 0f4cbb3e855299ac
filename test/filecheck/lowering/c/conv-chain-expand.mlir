// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A fuse-conv-chain kernel with an expand in front (1x1 conv, Clip(0, 6), depthwise conv,
// Relu, 1x1 conv) lowers to one clib.dwpw call with the expand's weights, params and clamp,
// x being the expand's input (afrt_edwpw_f32). No buffer for either intermediate.
func.func @main(%x: tensor<1x4x7x5xf32>, %we: tensor<8x4x1x1xf32>, %wd: tensor<8x1x3x3xf32>, %wp: tensor<20x8x1x1xf32>) -> tensor<1x20x4x3xf32> {
  %k = fusion.kernel "chain_conv_relu6_conv_relu_conv" ["ex", "exclip", "dw", "relu", "pw"] (%x, %we, %wd, %wp) : (tensor<1x4x7x5xf32>, tensor<8x4x1x1xf32>, tensor<8x1x3x3xf32>, tensor<20x8x1x1xf32>) -> tensor<1x20x4x3xf32> {
  ^bb0(%a: tensor<1x4x7x5xf32>, %f: tensor<8x4x1x1xf32>, %b: tensor<8x1x3x3xf32>, %c: tensor<20x8x1x1xf32>):
    %e = nn.conv %a, %f {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x7x5xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x7x5xf32>
    %g = nn.clip %e {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x8x7x5xf32>) -> tensor<1x8x7x5xf32>
    %d = nn.conv %g, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x7x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x3xf32>
    %m = nn.relu %d : (tensor<1x8x4x3xf32>) -> tensor<1x8x4x3xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x3xf32>, tensor<20x8x1x1xf32>) -> tensor<1x20x4x3xf32>
    fusion.yield %p : tensor<1x20x4x3xf32>
  }
  func.return %k : tensor<1x20x4x3xf32>
}
// CHECK-LABEL: func.func private @k0_chain_conv_relu6_conv_relu_conv(
// CHECK-NOT:     memref.alloc
// CHECK:         "clib.dwpw"(%0, %2, %3, %4, %1) <{ex_params = array<i64: 1, 4, 7, 5, 8, 1, 1, 7, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1>, elo = 0.000000e+00 : f64, ehi = 6.000000e+00 : f64, params = array<i64: 1, 8, 7, 5, 8, 3, 3, 4, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8>, pw_params = array<i64: 1, 8, 4, 3, 20, 1, 1, 4, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1>, lo = 0.000000e+00 : f64, hi = 0x7ff0000000000000 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0>}>
// CHECK-NOT:     clib.conv2d
// CHECK:         func.return

// C-LABEL: static void k0_chain_conv_relu6_conv_relu_conv(
// C:           const afrt_conv_params pe_ = {INT64_C(1), INT64_C(4), INT64_C(7), INT64_C(5), INT64_C(8), INT64_C(1), INT64_C(1), INT64_C(7), INT64_C(5),
// C-NEXT:      (void)afrt_edwpw_f32(v0, v1, NULL, 0x0.0p+0f, 0x1.8000000000000p+2f, v2, NULL, 0x0.0p+0f, INFINITY, v3, NULL, v4, &pe_, &pd_, &pp_, afrt_no_epilogue()); }
// C-NOT:     afrt_conv2d_f32
