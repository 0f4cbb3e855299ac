// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A 1x1 stride-1 conv on a small map takes gemm_1x1_t (output channels along the GEMM core's
// 32-wide panels) where that pads the GEMM less, on layers of at least 512 input channels: 512 -> 528 channels on a 4x4 map (16 positions would fill half a panel). On an
// 8x8 map (64 positions, two whole panels) it stays gemm_1x1.
// Both reach the runtime through afrt_conv2d_f32, which takes the same rule.
func.func @main(%x: tensor<1x512x4x4xf32>, %w: tensor<528x512x1x1xf32>, %x8: tensor<1x512x8x8xf32>) -> (tensor<1x528x4x4xf32>, tensor<1x528x8x8xf32>) {
  %t = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x4x4xf32>, tensor<528x512x1x1xf32>) -> tensor<1x528x4x4xf32>
  %d = nn.conv %x8, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x8x8xf32>, tensor<528x512x1x1xf32>) -> tensor<1x528x8x8xf32>
  func.return %t, %d : tensor<1x528x4x4xf32>, tensor<1x528x8x8xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 512, 4, 4, 528, 1, 1, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1_t"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 512, 8, 8, 528, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1"

// C-LABEL: static void op0_conv(
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
// C-LABEL: static void op1_conv(
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
