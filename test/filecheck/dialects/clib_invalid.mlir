// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

// clib.conv2d records the algorithm chosen at lowering; it must be the one its shapes take
// (here a depthwise conv, group == C == 8, labelled as a 1x1 GEMM).
func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<8x1x3x3xf32>, %y: memref<1x8x3x3xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<8x1x3x3xf32>, memref<1x8x3x3xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "gemm_1x1" but these params take "direct_dw"

// -----

func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<4x8x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_dw", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<4x8x3x3xf32>, memref<1x4x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "direct_dw" but these params take "im2col_gemm"

// -----

// A 3x3 stride-1 dense conv where Winograd loses (8 -> 32 channels) labelled winograd.
func.func @f(%x: memref<1x8x16x16xf32>, %w: memref<32x8x3x3xf32>, %y: memref<1x32x16x16xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 16, 16, 32, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "winograd", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x8x16x16xf32>, memref<32x8x3x3xf32>, memref<1x32x16x16xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "winograd" but these params take "im2col_gemm"

// -----

// A blocked x (assign-layout) needs a conv the blocked kernel fits: not a 5x5 one.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x5x5xf32>, %y: memref<1x32x4x4xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 5, 5, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_nchwc", x_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x5x5xf32>, memref<1x32x4x4xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': a blocked x or y needs an fp32 conv the blocked kernel fits

// -----

// A layout that is neither NCHW nor NCHW16c.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x1x1xf32>, %y: memref<1x32x8x8xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_nchwc", y_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x1x1xf32>, memref<1x32x8x8xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': y_layout 'nhwc' is not one of nchw, nchw16c

// -----

// A blocked side puts the conv on the blocked kernel: any other algo is refused.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x1x1xf32>, %y: memref<1x32x8x8xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", y_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x1x1xf32>, memref<1x32x8x8xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "gemm_1x1" but these params take "direct_nchwc"
