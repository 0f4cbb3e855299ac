// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s

// An elementwise kernel is one loop nest: add is computed inline (never stored) and the
// per-channel bias is read through a [1, 4, 1] view; H and W merge into one inner loop.
func.func @main(%x: tensor<2x4x3x3xf32>, %b: tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32> {
  %0 = fusion.kernel "ew" ["add", "relu"] (%x, %b) : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32> {
  ^bb0(%a: tensor<2x4x3x3xf32>, %c: tensor<1x4x1x1xf32>):
    %s = nn.add %a, %c : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
    %r = nn.relu %s : (tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
    fusion.yield %r : tensor<2x4x3x3xf32>
  }
  func.return %0 : tensor<2x4x3x3xf32>
}
// CHECK-LABEL: func.func private @k0_ew(
// CHECK-NEXT:    %[[X:.*]] = clib.view %0[0 : i64] : memref<2x4x3x3xf32> -> memref<2x4x9xf32>
// CHECK-NEXT:    %[[B:.*]] = clib.view %1[0 : i64] : memref<1x4x1x1xf32> -> memref<1x4x1xf32>
// CHECK-NEXT:    %[[Y:.*]] = clib.view %2[0 : i64] : memref<2x4x3x3xf32> -> memref<2x4x9xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step
// CHECK:         scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:      %[[XV:.*]] = memref.load %[[X]][%[[N]], %[[C]], %[[P]]] : memref<2x4x9xf32>
// CHECK:           %[[BV:.*]] = memref.load %[[B]][%{{.*}}, %[[C]], %{{.*}}] : memref<1x4x1xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[XV]], %[[BV]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[S]], %[[Z]] : f32
// CHECK-NEXT:      memref.store %[[R]], %[[Y]][%[[N]], %[[C]], %[[P]]] : memref<2x4x9xf32>
// CHECK-NOT:     scf.for
// CHECK:         func.return

// -----

// MatMul + bias + ReLU: one library call with the built-in clamp epilogue and the bias as its
// column bias (afrt_epi_bias_clamp: the GEMM core adds it and clamps in registers); no
// generated epilogue function.
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = fusion.kernel "matmul_add_relu" ["mm", "add", "relu"] (%x, %w, %b) : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> {
  ^bb0(%a: tensor<8x16xf32>, %k: tensor<16x32xf32>, %c: tensor<32xf32>):
    %m = nn.matmul %a, %k : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %s = nn.add %m, %c : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %r = nn.relu %s : (tensor<8x32xf32>) -> tensor<8x32xf32>
    fusion.yield %r : tensor<8x32xf32>
  }
  func.return %0 : tensor<8x32xf32>
}
// CHECK-LABEL: func.func private @k0_matmul_add_relu(
// CHECK-NEXT:    %[[FN:.*]], %[[CTX:.*]] = "clib.clamp_epilogue"(%2) <{res_stride = 256 : i64, res_ld = 32 : i64, lo = 0.000000e+00 : f32, hi = 0x7f800000 : f32, operandSegmentSizes = array<i32: 0, 1, 0>}> : (memref<32xf32>) -> (!clib.ptr, !clib.ptr)
// CHECK-NEXT:    "clib.matmul"(%0, %1, %3, %[[FN]], %[[CTX]]) <{params = array<i64: 1, 8, 32, 16, 16, 128, 0, 32, 512, 0, 32, 256>
// CHECK-NOT:     scf.for
// CHECK:         func.return
// CHECK-NOT:     _epilogue(

// -----

// A batch of rows times one weight matrix (Swin's MLP on [1, H, W, C] tokens) is one GEMM of
// all the rows: batch 1, M = 2 * 3 * 8, the epilogue's blocks [1, 48, 32] over the same rows.
func.func @main(%x: tensor<2x3x8x16xf32>, %w: tensor<16x32xf32>, %r: tensor<2x3x8x32xf32>) -> tensor<2x3x8x32xf32> {
  %0 = fusion.kernel "matmul_add" ["mm", "add"] (%x, %w, %r) : (tensor<2x3x8x16xf32>, tensor<16x32xf32>, tensor<2x3x8x32xf32>) -> tensor<2x3x8x32xf32> {
  ^bb0(%a: tensor<2x3x8x16xf32>, %k: tensor<16x32xf32>, %c: tensor<2x3x8x32xf32>):
    %m = nn.matmul %a, %k : (tensor<2x3x8x16xf32>, tensor<16x32xf32>) -> tensor<2x3x8x32xf32>
    %s = nn.add %m, %c : (tensor<2x3x8x32xf32>, tensor<2x3x8x32xf32>) -> tensor<2x3x8x32xf32>
    fusion.yield %s : tensor<2x3x8x32xf32>
  }
  func.return %0 : tensor<2x3x8x32xf32>
}
// CHECK-LABEL: func.func private @k0_matmul_add(
// CHECK:         "clib.matmul"(%{{.*}}) <{params = array<i64: 1, 48, 32, 16, 16, 0, 0, 32, 0, 0, 32, 1536>

// -----

// Must not fold the batch into rows: each batch index has its own B.
func.func @main(%x: tensor<2x8x16xf32>, %w: tensor<2x16x32xf32>) -> tensor<2x8x32xf32> {
  %0 = fusion.kernel "matmul" ["mm"] (%x, %w) : (tensor<2x8x16xf32>, tensor<2x16x32xf32>) -> tensor<2x8x32xf32> {
  ^bb0(%a: tensor<2x8x16xf32>, %k: tensor<2x16x32xf32>):
    %m = nn.matmul %a, %k : (tensor<2x8x16xf32>, tensor<2x16x32xf32>) -> tensor<2x8x32xf32>
    fusion.yield %m : tensor<2x8x32xf32>
  }
  func.return %0 : tensor<2x8x32xf32>
}
// CHECK-LABEL: func.func private @k0_matmul(
// CHECK:         "clib.matmul"(%{{.*}}) <{params = array<i64: 2, 8, 32, 16, 16, 128, 0, 32, 512, 0, 32, 256>

// -----

// Must not fuse the epilogue: the matmul result is also a kernel output, so the library call
// writes it and ReLU is its own (flat) loop.
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %0, %1 = fusion.kernel "matmul_relu" ["mm", "relu"] (%x, %w) : (tensor<8x16xf32>, tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: tensor<8x16xf32>, %k: tensor<16x32xf32>):
    %m = nn.matmul %a, %k : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %r = nn.relu %m : (tensor<8x32xf32>) -> tensor<8x32xf32>
    fusion.yield %m, %r : tensor<8x32xf32>, tensor<8x32xf32>
  }
  func.return %0, %1 : tensor<8x32xf32>, tensor<8x32xf32>
}
// CHECK-NOT:   c.epilogue
// CHECK-LABEL: func.func private @k0_matmul_relu(
// CHECK-NEXT:    "clib.matmul"(%0, %1, %2) <{{.*}}operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}>
// CHECK-NEXT:    %[[M:.*]] = clib.view %2[0 : i64] : memref<8x32xf32> -> memref<256xf32>
// CHECK-NEXT:    %[[R:.*]] = clib.view %3[0 : i64] : memref<8x32xf32> -> memref<256xf32>
// CHECK:         scf.for
// CHECK-NEXT:      memref.load %[[M]]
// CHECK:           arith.maximumf
// CHECK-NEXT:      memref.store %{{.*}}, %[[R]]

// -----

// Softmax is a row loop: max, exp-and-sum, scale (three passes over one row).
func.func @main(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %0 = nn.softmax %x {axis = 1 : i64} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}
// CHECK-LABEL: func.func private @op0_softmax(
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           %[[MAX:.*]] = scf.for {{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK:             arith.maximumf %[[M]]
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[S:.*]] = %{{.*}}) -> (f32) {
// CHECK:             arith.subf %{{.*}}, %[[MAX]]
// CHECK-NEXT:        math.exp
// CHECK:           arith.divf %{{.*}}, %[[SUM]]
// CHECK:           scf.for
// CHECK:             arith.mulf

// -----

// f16 conv: the library has f32 conv only, so the operands are widened into f32 buffers, the
// f32 conv runs without an epilogue, and the cast back to f16 and the ReLU are one loop.
func.func @main(%x: tensor<1x2x5xf16>, %w: tensor<3x2x2xf16>) -> tensor<1x3x4xf16> {
  %0 = fusion.kernel "conv_relu" ["conv", "relu"] (%x, %w) : (tensor<1x2x5xf16>, tensor<3x2x2xf16>) -> tensor<1x3x4xf16> {
  ^bb0(%a: tensor<1x2x5xf16>, %k: tensor<3x2x2xf16>):
    %c = nn.conv %a, %k {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x2x5xf16>, tensor<3x2x2xf16>) -> tensor<1x3x4xf16>
    %r = nn.relu %c : (tensor<1x3x4xf16>) -> tensor<1x3x4xf16>
    fusion.yield %r : tensor<1x3x4xf16>
  }
  func.return %0 : tensor<1x3x4xf16>
}
// CHECK-LABEL: func.func private @k0_conv_relu(
// CHECK:         %[[X32:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x5xf32>
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:         %[[W32:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x2x2xf32>
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:         %[[Y32:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x3x4xf32>
// CHECK-NEXT:    "clib.conv2d"(%[[X32]], %[[W32]], %[[Y32]]) <{params = {{.*}}, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0>}> : (memref<1x2x5xf32>, memref<3x2x2xf32>, memref<1x3x4xf32>) -> ()
// CHECK:         scf.for
// CHECK-NEXT:      %[[V:.*]] = memref.load %{{.*}} : memref<12xf32>
// CHECK-NEXT:      %[[H:.*]] = arith.truncf %[[V]] : f32 to f16
// CHECK:           %[[R:.*]] = arith.maximumf %[[H]], %{{.*}} : f16
// CHECK-NEXT:      memref.store %[[R]], %{{.*}} : memref<12xf16>
// CHECK-NOT:     scf.for
// CHECK-NOT:     c.epilogue
// CHECK:         func.return
