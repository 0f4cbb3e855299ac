// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

// clib.conv2d records the algorithm chosen at lowering; it must be the one its shapes take
// (here a depthwise conv, group == C == 8, labelled as a 1x1 GEMM).
func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<8x1x3x3xf32>, %y: memref<1x8x3x3xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<8x1x3x3xf32>, memref<1x8x3x3xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "gemm_1x1" but these params take "direct_dw_lanes"

// -----

// A dilated depthwise conv takes the phase planes (direct_dw), not the channel lanes.
func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<8x1x3x3xf32>, %y: memref<1x8x2x2xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 8>, algo = "direct_dw_lanes", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<8x1x3x3xf32>, memref<1x8x2x2xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "direct_dw_lanes" but these params take "direct_dw"

// -----

func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<4x8x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 4, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_dw", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<4x8x3x3xf32>, memref<1x4x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "direct_dw" but these params take "im2col_gemm"

// -----

// A 3x3 stride-1 dense conv where Winograd loses (8 -> 32 channels) labelled winograd.
func.func @f(%x: memref<1x8x16x16xf32>, %w: memref<32x8x3x3xf32>, %y: memref<1x32x16x16xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 16, 16, 32, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "winograd", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x8x16x16xf32>, memref<32x8x3x3xf32>, memref<1x32x16x16xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "winograd" but these params take "im2col_gemm"

// -----

// A blocked x (assign-layout) needs a conv the blocked kernel fits: not a 5x5 one.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x5x5xf32>, %y: memref<1x32x4x4xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 5, 5, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_nchwc", x_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x5x5xf32>, memref<1x32x4x4xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': a blocked x or y needs an fp32 conv the blocked kernel fits

// -----

// A layout that is neither NCHW nor NCHW16c.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x1x1xf32>, %y: memref<1x32x8x8xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_nchwc", y_layout = "nhwc", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x1x1xf32>, memref<1x32x8x8xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': y_layout 'nhwc' is not one of nchw, nchw16c

// -----

// A blocked side puts the conv on the blocked kernel: any other algo is refused.
func.func @f(%x: memref<1x16x8x8xf32>, %w: memref<32x16x1x1xf32>, %y: memref<1x32x8x8xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 16, 8, 8, 32, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", y_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x16x8x8xf32>, memref<32x16x1x1xf32>, memref<1x32x8x8xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "gemm_1x1" but these params take "direct_nchwc"

// -----

// A run-time batch (params entry -2^63) needs its dyn operand.
func.func @f(%x: memref<?x8x6x6xf32>, %w: memref<4x8x1x1xf32>, %y: memref<?x4x6x6xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: -9223372036854775808, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, bounds = array<i64: 8, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<?x8x6x6xf32>, memref<4x8x1x1xf32>, memref<?x4x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': 1 dynamic params but 0 dyn operands

// -----

// A conv with run-time params records their upper bounds (its algorithm and scratch come
// from them).
func.func @f(%x: memref<?x8x6x6xf32>, %w: memref<4x8x1x1xf32>, %y: memref<?x4x6x6xf32>, %n: index) {
  "clib.conv2d"(%x, %w, %y, %n) <{params = array<i64: -9223372036854775808, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1>}> : (memref<?x8x6x6xf32>, memref<4x8x1x1xf32>, memref<?x4x6x6xf32>, index) -> ()
  func.return
}
// CHECK: 'clib.conv2d': run-time params need bounds (their upper bounds)

// -----

// The bounds agree with every static param.
func.func @f(%x: memref<?x8x6x6xf32>, %w: memref<4x8x1x1xf32>, %y: memref<?x4x6x6xf32>, %n: index) {
  "clib.conv2d"(%x, %w, %y, %n) <{params = array<i64: -9223372036854775808, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, bounds = array<i64: 8, 8, 6, 6, 4, 1, 1, 5, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1>}> : (memref<?x8x6x6xf32>, memref<4x8x1x1xf32>, memref<?x4x6x6xf32>, index) -> ()
  func.return
}
// CHECK: 'clib.conv2d': bounds[7] = 5 is not params[7] = 6 or a number

// -----

// The algorithm is the one the bounds take: a Winograd-sized 3x3 map at its upper bound.
func.func @f(%x: memref<?x32x?x?xf32>, %w: memref<32x32x3x3xf32>, %y: memref<?x32x?x?xf32>, %n: index, %h: index) {
  "clib.conv2d"(%x, %w, %y, %n, %h, %h, %h, %h) <{params = array<i64: -9223372036854775808, 32, -9223372036854775808, -9223372036854775808, 32, 3, 3, -9223372036854775808, -9223372036854775808, 1, 1, 1, 1, 1, 1, 1, 1, 1>, bounds = array<i64: 4, 32, 32, 32, 32, 3, 3, 32, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 5>}> : (memref<?x32x?x?xf32>, memref<32x32x3x3xf32>, memref<?x32x?x?xf32>, index, index, index, index, index) -> ()
  func.return
}
// CHECK: 'clib.conv2d': algo is "im2col_gemm" but these params take "winograd"

// -----

// Static params carry no bounds.
func.func @f(%x: memref<1x8x6x6xf32>, %w: memref<4x8x1x1xf32>, %y: memref<1x4x6x6xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, bounds = array<i64: 1, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<4x8x1x1xf32>, memref<1x4x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': bounds given but no param is a run-time one

// -----

func.func @f(%x: memref<?x8x6x6xf32>, %y: memref<?x8x3x3xf32>, %n: index) {
  "clib.pool2d"(%x, %y, %n, %n) <{kind = "max", params = array<i64: -9223372036854775808, 8, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 0>}> : (memref<?x8x6x6xf32>, memref<?x8x3x3xf32>, index, index) -> ()
  func.return
}
// CHECK: 'clib.pool2d': 1 dynamic params but 2 dyn operands

// -----

// A depthwise -> pointwise chain whose pointwise batch is another run-time value than the
// depthwise one's is not a chain afrt_dwpw_f32 takes.
func.func @f(%x: memref<?x8x6x6xf32>, %wd: memref<8x1x3x3xf32>, %wp: memref<4x8x1x1xf32>, %y: memref<?x4x6x6xf32>, %n: index, %m: index) {
  "clib.dwpw"(%x, %wd, %wp, %y, %n, %m) <{params = array<i64: -9223372036854775808, 8, 6, 6, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 8>, pw_params = array<i64: -9223372036854775808, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, lo = 0.0 : f64, hi = 6.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2>}> : (memref<?x8x6x6xf32>, memref<8x1x3x3xf32>, memref<4x8x1x1xf32>, memref<?x4x6x6xf32>, index, index) -> ()
  func.return
}
// CHECK: 'clib.dwpw': params are not a depthwise conv followed by a 1x1 conv over its output

// -----

// An expand in front of the chain needs its weights (we) with its params.
func.func @f(%x: memref<1x8x6x6xf32>, %wd: memref<8x1x3x3xf32>, %wp: memref<4x8x1x1xf32>, %y: memref<1x4x6x6xf32>) {
  "clib.dwpw"(%x, %wd, %wp, %y) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 8>, pw_params = array<i64: 1, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, ex_params = array<i64: 1, 2, 6, 6, 8, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, lo = 0.0 : f64, hi = 6.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>}> : (memref<1x8x6x6xf32>, memref<8x1x3x3xf32>, memref<4x8x1x1xf32>, memref<1x4x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.dwpw': we and ex_params go together (be needs both)

// -----

// The expand must produce exactly the depthwise conv's input: 7 channels, not 8.
func.func @f(%x: memref<1x2x6x6xf32>, %wd: memref<8x1x3x3xf32>, %wp: memref<4x8x1x1xf32>, %y: memref<1x4x6x6xf32>, %we: memref<7x2x1x1xf32>) {
  "clib.dwpw"(%x, %wd, %wp, %y, %we) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 8>, pw_params = array<i64: 1, 8, 6, 6, 4, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, ex_params = array<i64: 1, 2, 6, 6, 7, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, lo = 0.0 : f64, hi = 6.0 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0>}> : (memref<1x2x6x6xf32>, memref<8x1x3x3xf32>, memref<4x8x1x1xf32>, memref<1x4x6x6xf32>, memref<7x2x1x1xf32>) -> ()
  func.return
}
// CHECK: 'clib.dwpw': ex_params are not a 1x1 conv producing the depthwise input

// -----

// gemm_1x1_xb reads blocks into NCHW y only (a blocked y is direct_1x1_b's or gemm_1x1_b's).
func.func @f(%x: memref<1x32x6x6xf32>, %w: memref<16x32x1x1xf32>, %y: memref<1x16x6x6xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 32, 6, 6, 16, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1_xb", x_layout = "nchw16c", y_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x32x6x6xf32>, memref<16x32x1x1xf32>, memref<1x16x6x6xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': gemm_1x1_xb is an fp32 conv from NCHW16c x into NCHW y

// -----

// gemm_1x1_xb is a 1x1 stride-1 conv's GEMM: a strided one is refused.
func.func @f(%x: memref<1x32x6x6xf32>, %w: memref<16x32x1x1xf32>, %y: memref<1x16x3x3xf32>) {
  "clib.conv2d"(%x, %w, %y) <{params = array<i64: 1, 32, 6, 6, 16, 1, 1, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1_xb", x_layout = "nchw16c", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x32x6x6xf32>, memref<16x32x1x1xf32>, memref<1x16x3x3xf32>) -> ()
  func.return
}
// CHECK: 'clib.conv2d': gemm_1x1_xb needs a 1x1 stride-1 unpadded group-1 conv
