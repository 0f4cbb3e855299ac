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

// -----

// Positive: torchvision's dense block concatenates every earlier map again; each concat
// becomes the previous one (the longest earlier prefix) plus its new maps.
func.func @concat_prefix(%x: tensor<1x2x4xf32>) -> (tensor<1x6x4xf32>, tensor<1x8x4xf32>) {
  %a = nn.relu %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %b = nn.sigmoid %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %c1 = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x4x4xf32>
  %d = nn.tanh %c1 : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %e = nn.exp %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %c2 = nn.concat %a, %b, %e {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x6x4xf32>
  %f = nn.neg %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %c3 = nn.concat %a, %b, %e, %f {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x8x4xf32>
  func.return %c2, %c3 : tensor<1x6x4xf32>, tensor<1x8x4xf32>
}
// CHECK-LABEL: func.func @concat_prefix
// CHECK:         %c1 = nn.concat %a, %b {axis = 1 : i64}
// CHECK:         %[[C2:.*]] = nn.concat %c1, %e {axis = 1 : i64}
// CHECK:         %[[C3:.*]] = nn.concat %[[C2]], %f {axis = 1 : i64}
// CHECK-NEXT:    func.return %[[C2]], %[[C3]]

// -----

// Must not fire: a concat computed later, another axis, or operands in another order.
func.func @concat_no_prefix(%x: tensor<1x2x4xf32>) -> (tensor<1x6x4xf32>, tensor<1x2x8xf32>, tensor<1x4x4xf32>) {
  %a = nn.relu %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %b = nn.sigmoid %x : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %c2 = nn.concat %a, %b, %a {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x6x4xf32>
  %w = nn.concat %a, %b {axis = 2 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  %c1 = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x4x4xf32>
  func.return %c2, %w, %c1 : tensor<1x6x4xf32>, tensor<1x2x8xf32>, tensor<1x4x4xf32>
}
// CHECK-LABEL: func.func @concat_no_prefix
// CHECK:         %c2 = nn.concat %a, %b, %a {axis = 1 : i64}
// CHECK-NEXT:    %w = nn.concat %a, %b {axis = 2 : i64}
// CHECK-NEXT:    %c1 = nn.concat %a, %b {axis = 1 : i64}
