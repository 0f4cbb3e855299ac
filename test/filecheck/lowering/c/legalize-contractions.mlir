// RUN: autofusion-opt %s -p legalize-contractions | filecheck %s

// The library has f32 conv/GEMM only: an f16 contraction (here a MatMul with a constant
// operand, converted at compile time) and an f64 Gemm are rebuilt on f32 tensors with one
// cast back; the ReLU then reads the f16 result.
func.func @f16_matmul(%a: tensor<2x3xf16>) -> tensor<2x4xf16> {
  %w = nn.constant dense<0.5> : tensor<3x4xf16>
  %y = nn.matmul %a, %w : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  %r = nn.relu %y : (tensor<2x4xf16>) -> tensor<2x4xf16>
  func.return %r : tensor<2x4xf16>
}
func.func @f64_gemm(%m: tensor<4x8xf64>, %n: tensor<8x16xf64>) -> tensor<4x16xf64> {
  %g = nn.gemm %m, %n {alpha = 1.0 : f64, beta = 0.0 : f64, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<4x8xf64>, tensor<8x16xf64>) -> tensor<4x16xf64>
  func.return %g : tensor<4x16xf64>
}

// CHECK-LABEL: func.func @f16_matmul(%a: tensor<2x3xf16>) -> tensor<2x4xf16> {
// CHECK-NEXT:    %[[A:.*]] = nn.cast %a : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<5.000000e-01> : tensor<3x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = nn.matmul %[[A]], %[[W]] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.cast %[[Y]] : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-NEXT:    %r = nn.relu %[[B]] : (tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:    func.return %r : tensor<2x4xf16>

// CHECK-LABEL: func.func @f64_gemm(
// CHECK-NEXT:    %[[M:.*]] = nn.cast %m : (tensor<4x8xf64>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[N:.*]] = nn.cast %n : (tensor<8x16xf64>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[G:.*]] = nn.gemm %[[M]], %[[N]] {{.*}} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.cast %[[G]] : (tensor<4x16xf32>) -> tensor<4x16xf64>
// CHECK-NEXT:    func.return %[[R]] : tensor<4x16xf64>

// Must not fire: f32 contractions run in the library, and an f64 MatMul keeps its exact loops.
func.func @kept(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x3xf64>, %d: tensor<3x4xf64>) -> (tensor<2x4xf32>, tensor<2x4xf64>) {
  %y = nn.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %z = nn.matmul %c, %d : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  func.return %y, %z : tensor<2x4xf32>, tensor<2x4xf64>
}

// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %y = nn.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %z = nn.matmul %c, %d : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
// CHECK-NEXT:    func.return %y, %z : tensor<2x4xf32>, tensor<2x4xf64>
