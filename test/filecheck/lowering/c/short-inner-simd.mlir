// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s

// Positive: fold-batchnorm's per-channel x*s + t + Relu on 3x3 maps: the nest is [C, 9];
// its 9-long inner loop is printed under AF_SIMD (omp simd), the channel loop is not.
func.func @main(%x: tensor<1x20x3x3xf32>, %s: tensor<20x1x1xf32>, %t: tensor<20x1x1xf32>) -> tensor<1x20x3x3xf32> {
  %0 = fusion.kernel "ew_mul_add_relu" ["norm", "relu"] (%x, %s, %t) : (tensor<1x20x3x3xf32>, tensor<20x1x1xf32>, tensor<20x1x1xf32>) -> tensor<1x20x3x3xf32> {
  ^bb0(%a: tensor<1x20x3x3xf32>, %b: tensor<20x1x1xf32>, %c: tensor<20x1x1xf32>):
    %m = nn.mul %a, %b : (tensor<1x20x3x3xf32>, tensor<20x1x1xf32>) -> tensor<1x20x3x3xf32>
    %p = nn.add %m, %c : (tensor<1x20x3x3xf32>, tensor<20x1x1xf32>) -> tensor<1x20x3x3xf32>
    %r = nn.relu %p : (tensor<1x20x3x3xf32>) -> tensor<1x20x3x3xf32>
    fusion.yield %r : tensor<1x20x3x3xf32>
  }
  func.return %0 : tensor<1x20x3x3xf32>
}
// CHECK:       #define AF_SIMD AF_PRAGMA_(omp simd)
// CHECK-LABEL: static void k0_ew_mul_add_relu(
// CHECK:         for (int64_t [[C:v[0-9]+]] = 0; [[C]] < 20; ++[[C]]) {
// CHECK-NEXT:      AF_SIMD
// CHECK-NEXT:      for (int64_t [[P:v[0-9]+]] = 0; [[P]] < 9; ++[[P]]) {
// CHECK-NOT:     AF_SIMD
// CHECK:       af_graph

// -----

// Must not fire: a 16-long inner loop (gcc vectorises it as a loop) and a flat same-shape
// loop (no outer loop) stay plain.
func.func @main(%x: tensor<1x20x4x4xf32>, %s: tensor<20x1x1xf32>) -> (tensor<1x20x4x4xf32>, tensor<1x20x4x4xf32>) {
  %0 = fusion.kernel "ew_mul_relu" ["norm", "relu"] (%x, %s) : (tensor<1x20x4x4xf32>, tensor<20x1x1xf32>) -> tensor<1x20x4x4xf32> {
  ^bb0(%a: tensor<1x20x4x4xf32>, %b: tensor<20x1x1xf32>):
    %m = nn.mul %a, %b : (tensor<1x20x4x4xf32>, tensor<20x1x1xf32>) -> tensor<1x20x4x4xf32>
    %r = nn.relu %m : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32>
    fusion.yield %r : tensor<1x20x4x4xf32>
  }
  %1 = fusion.kernel "ew_relu" ["relu2"] (%x) : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32> {
  ^bb0(%a: tensor<1x20x4x4xf32>):
    %r = nn.relu %a : (tensor<1x20x4x4xf32>) -> tensor<1x20x4x4xf32>
    fusion.yield %r : tensor<1x20x4x4xf32>
  }
  func.return %0, %1 : tensor<1x20x4x4xf32>, tensor<1x20x4x4xf32>
}
// CHECK-LABEL: static void k0_ew_mul_relu(
// CHECK-NOT:     AF_SIMD
// CHECK:         for (int64_t [[P:v[0-9]+]] = 0; [[P]] < 16; ++[[P]]) {
// CHECK-LABEL: static void k1_ew_relu(
// CHECK-NOT:     AF_SIMD
// CHECK:         for (int64_t [[I:v[0-9]+]] = 0; [[I]] < 320; ++[[I]]) {
// CHECK-NOT:     AF_SIMD
// CHECK:       af_graph
