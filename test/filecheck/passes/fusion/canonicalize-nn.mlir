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

// -----

// Positive: the dynamo exporter's K^T, [B, H, T, D] -> [B*H, T, D] -> [B*H, D, T] ->
// [B, H, D, T], is one transpose of the 4-d tensor; a permutation of whole runs ([2, 3, 4]
// -> [6, 4] -> [4, 6] -> [4, 2, 3]); timm's K (a squeezed slice of the fused qkv, [1, 1, H,
// T, D]) is reshaped to [1, H, T, D] and transposed; [6, 4] -> [4, 6] -> [4, 3, 2] is
// [3, 2, 4] transposed.
func.func @transpose_through_reshapes(%k: tensor<1x2x5x4xf32>, %x: tensor<2x3x4xf32>, %s: tensor<1x1x2x5x4xf32>) -> (tensor<1x2x4x5xf32>, tensor<4x2x3xf32>, tensor<1x2x4x5xf32>, tensor<4x3x2xf32>) {
  %a = nn.reshape %k {onnx.origins = ["r1"]} : (tensor<1x2x5x4xf32>) -> tensor<2x5x4xf32>
  %b = nn.transpose %a {perm = array<i64: 0, 2, 1>, onnx.origins = ["t"]} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %c = nn.reshape %b {onnx.origins = ["r2"]} : (tensor<2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %d = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %e = nn.transpose %d {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %f = nn.reshape %e : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
  %g = nn.reshape %s : (tensor<1x1x2x5x4xf32>) -> tensor<2x5x4xf32>
  %h = nn.transpose %g {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %i = nn.reshape %h : (tensor<2x4x5xf32>) -> tensor<1x2x4x5xf32>
  %j = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %l = nn.transpose %j {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %m = nn.reshape %l : (tensor<4x6xf32>) -> tensor<4x3x2xf32>
  func.return %c, %f, %i, %m : tensor<1x2x4x5xf32>, tensor<4x2x3xf32>, tensor<1x2x4x5xf32>, tensor<4x3x2xf32>
}
// CHECK-LABEL: func.func @transpose_through_reshapes
// CHECK-NEXT:    %[[T:.*]] = nn.transpose %k {onnx.origins = ["r1", "t", "r2"], perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
// CHECK-NEXT:    %[[U:.*]] = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.reshape %s : (tensor<1x1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    %[[V:.*]] = nn.transpose %[[R]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = nn.transpose %[[S]] {perm = array<i64: 2, 0, 1>} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %[[T]], %[[U]], %[[V]], %[[W]]

// -----

// Must not fire: the last reshape does not split the transposed dims into runs ([4, 6] ->
// [8, 3]), the transpose has another reader, and a transpose with no reshape before it
// (%g reads %y: the same reshape of %x would be %d again, merged by the CSE).
func.func @transpose_not_through_reshapes(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<8x3xf32>, tensor<4x6xf32>, tensor<4x2x3xf32>, tensor<3x8xf32>) {
  %d = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %e = nn.transpose %d {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %f = nn.reshape %e : (tensor<4x6xf32>) -> tensor<8x3xf32>
  %g = nn.reshape %y : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %h = nn.transpose %g {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %i = nn.reshape %h : (tensor<4x6xf32>) -> tensor<4x2x3xf32>
  %j = nn.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %l = nn.reshape %j : (tensor<3x2x4xf32>) -> tensor<3x8xf32>
  func.return %f, %h, %i, %l : tensor<8x3xf32>, tensor<4x6xf32>, tensor<4x2x3xf32>, tensor<3x8xf32>
}
// CHECK-LABEL: func.func @transpose_not_through_reshapes
// CHECK:         %e = nn.transpose %d {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %f = nn.reshape %e
// CHECK:         %h = nn.transpose %g {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %i = nn.reshape %h
// CHECK:         %j = nn.transpose %x {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %l = nn.reshape %j

// -----

// Positive: common subexpressions. transformers' BERT writes the mask's where(m, 0, -inf)
// once per layer, each with its own constants: one where stays, with both origins, and the
// second layer's constants go; an op reading the merged results (the adds) merges next.
func.func @cse(%m: tensor<1x4xi1>, %x: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  %z0 = nn.constant dense<0.0> : tensor<1xf32>
  %i0 = nn.constant dense<0xFF800000> : tensor<1xf32>
  %w0 = nn.where %m, %z0, %i0 {onnx.origins = ["layer0/Where"]} : (tensor<1x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %a0 = nn.add %x, %w0 {onnx.origins = ["layer0/Add"]} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %z1 = nn.constant dense<0.0> : tensor<1xf32>
  %i1 = nn.constant dense<0xFF800000> : tensor<1xf32>
  %w1 = nn.where %m, %z1, %i1 {onnx.origins = ["layer1/Where"]} : (tensor<1x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %a1 = nn.add %x, %w1 {onnx.origins = ["layer1/Add"]} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %a0, %a1 : tensor<1x4xf32>, tensor<1x4xf32>
}
// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %z0 = nn.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %i0 = nn.constant
// CHECK-NEXT:    %w0 = nn.where %m, %z0, %i0 {onnx.origins = ["layer0/Where", "layer1/Where"]}
// CHECK-NEXT:    %a0 = nn.add %x, %w0 {onnx.origins = ["layer0/Add", "layer1/Add"]}
// CHECK-NEXT:    func.return %a0, %a0

// -----

// Must not merge: another constant value, another attribute, another result type, operands
// in another order, or an op that reads the graph's inputs differently.
func.func @no_cse(%m: tensor<1x4xi1>, %x: tensor<1x4xf32>, %y: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %z0 = nn.constant dense<0.0> : tensor<1xf32>
  %z1 = nn.constant dense<1.0> : tensor<1xf32>
  %w0 = nn.where %m, %z0, %x : (tensor<1x4xi1>, tensor<1xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %w1 = nn.where %m, %z1, %x : (tensor<1x4xi1>, tensor<1xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %t0 = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<1x4xf32>) -> tensor<4x1xf32>
  %r0 = nn.reshape %x : (tensor<1x4xf32>) -> tensor<4x1xf32>
  %s0 = nn.sub %x, %y : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %s1 = nn.sub %y, %x : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %w0, %w1, %t0, %r0, %s0, %s1 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}
// CHECK-LABEL: func.func @no_cse
// CHECK:         %w0 = nn.where %m, %z0, %x
// CHECK-NEXT:    %w1 = nn.where %m, %z1, %x
// CHECK-NEXT:    %t0 = nn.transpose %x
// CHECK-NEXT:    %r0 = nn.reshape %x
// CHECK-NEXT:    %s0 = nn.sub %x, %y
// CHECK-NEXT:    %s1 = nn.sub %y, %x
// CHECK-NEXT:    func.return %w0, %w1, %t0, %r0, %s0, %s1
