// RUN: autofusion-opt %s --split-input-file -p canonicalize-nn | filecheck %s

// Positive: reshape of reshape collapses; constant arithmetic folds.
func.func @reshapes(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<2xf32>) {
  %a = nn.reshape %x {onnx.origins = ["r1"]} : (tensor<2x6xf32>) -> tensor<12xf32>
  %b = nn.reshape %a {onnx.origins = ["r2"]} : (tensor<12xf32>) -> tensor<3x4xf32>
  %c1 = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c2 = nn.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %s = nn.mul %c1, %c2 {onnx.origins = ["m"]} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %b, %s : tensor<3x4xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %x {onnx.origins = ["r1", "r2"]} : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[3.000000e+00, 8.000000e+00]> : tensor<2xf32> {onnx.origins = ["m"]}
// CHECK-NEXT:    func.return %[[R]], %[[C]]

// -----

// Must not fire: a reshape that changes the shape and reads a computed value stays.
func.func @real_reshape(%x: tensor<2x6xf32>, %y: tensor<2xf32>) -> (tensor<12xf32>, tensor<2xf32>) {
  %a = nn.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>
  %c = nn.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %s = nn.mul %y, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %a, %s : tensor<12xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @real_reshape
// CHECK-NEXT:    %a = nn.reshape %x
// CHECK-NEXT:    %c = nn.constant
// CHECK-NEXT:    %s = nn.mul %y, %c
// CHECK-NEXT:    func.return %a, %s
