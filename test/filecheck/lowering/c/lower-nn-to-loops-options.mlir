// RUN: autofusion-opt %s -p 'convert-nn-to-buffers,lower-nn-to-loops{fuse_epilogues=false}' | filecheck %s

// With fuse_epilogues=false the same MatMul+bias+ReLU kernel is a plain library call into a
// temporary followed by one elementwise loop nest (still one C function).
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
// CHECK-NOT:   c.epilogue
// CHECK-LABEL: func.func private @k0_matmul_add_relu(
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK-NEXT:    "clib.matmul"(%0, %1, %[[T]]) <{{.*}}operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             memref.load %[[T]]
// CHECK:             arith.addf
// CHECK:             arith.maximumf
// CHECK:             memref.store
// CHECK:         memref.dealloc %[[T]]
// CHECK-NEXT:    func.return
