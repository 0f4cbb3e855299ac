// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A 3-d conv becomes one clib.conv3d (afrt_conv3d_f32: im2col over D x H x W into the GEMM
// core's B panels), its params in CONV3D_FIELDS order (N C D H W K T R S OD OH OW, strides,
// pads front/top/left/back/bottom/right, dilations, group); a 2-d conv beside it stays
// clib.conv2d.
func.func @main(%x: tensor<1x4x5x7x9xf32>, %w: tensor<6x2x3x3x1xf32>, %b: tensor<6xf32>, %x2: tensor<1x8x6x6xf32>, %w2: tensor<4x8x1x1xf32>) -> (tensor<1x6x1x4x10xf32>, tensor<1x4x6x6xf32>) {
  %y = nn.conv %x, %w, %b {strides = array<i64: 2, 2, 1>, pads = array<i64: 0, 1, 0, 1, 1, 1>, dilations = array<i64: 2, 1, 1>, group = 2 : i64} : (tensor<1x4x5x7x9xf32>, tensor<6x2x3x3x1xf32>, tensor<6xf32>) -> tensor<1x6x1x4x10xf32>
  %p = nn.conv %x2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x6x6xf32>
  func.return %y, %p : tensor<1x6x1x4x10xf32>, tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv3d"({{.*}}) <{params = array<i64: 1, 4, 5, 7, 9, 6, 3, 3, 1, 1, 4, 10, 2, 2, 1, 0, 1, 0, 1, 1, 1, 2, 1, 1, 2>
// CHECK-LABEL: func.func private @op1_conv(
// CHECK-NOT:     clib.conv3d
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1"

// C-LABEL: static void op0_conv(
// C:         { const afrt_conv3d_params p_ = {INT64_C(1), INT64_C(4), INT64_C(5),
// C-NEXT:      afrt_conv3d_f32({{.*}}, &p_, afrt_no_epilogue()); }
// C-LABEL: static void op1_conv(
// C-NOT:     afrt_conv3d_f32
// C:         afrt_conv2d_f32(
