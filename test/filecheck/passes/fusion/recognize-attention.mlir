// RUN: autofusion-opt %s --split-input-file -p recognize-attention | filecheck %s

// Positive: q @ transpose(k) / 2 + mask -> softmax -> @ v.
func.func @sdpa(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>, onnx.origins = ["kt"]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = nn.matmul %q, %kt {onnx.origins = ["qk"]} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.div %s, %c {onnx.origins = ["scale"]} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %a = nn.add %d, %mask {onnx.origins = ["mask"]} : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %a {axis = 3 : i64, onnx.origins = ["softmax"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = nn.matmul %p, %v {onnx.origins = ["pv"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @sdpa
// CHECK-NEXT:    %[[A:.*]] = nn.attention %q, %k, %v, %mask {onnx.origins = ["qk", "scale", "mask", "softmax", "pv"], scale = 5.000000e-01 : f64}
// CHECK-NEXT:    func.return %[[A]]

// -----

// Must not fire: the softmax runs over axis 2, not the key axis.
func.func @wrong_axis(%q: tensor<1x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %s = nn.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %p = nn.softmax %s {axis = 1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %o : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
// CHECK-NEXT:    %[[O:.*]] = nn.matmul
// CHECK-NEXT:    func.return %[[O]]

// -----

// Positive, the form torch's exporters write: sqrt(scale) on q and on k^T, and the IsNaN guard
// where(not(equal(p, p)), 0, p) before the second matmul -> nan_to_zero, scale = 0.5 * 0.25.
func.func @torch_sdpa(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %c1 = nn.constant dense<0.5> : tensor<f32>
  %c2 = nn.constant dense<0.25> : tensor<f32>
  %z = nn.constant dense<0.0> : tensor<1xf32>
  %qs = nn.mul %q, %c1 {onnx.origins = ["mul_q"]} : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>, onnx.origins = ["kt"]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %ks = nn.mul %kt, %c2 {onnx.origins = ["mul_k"]} : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %s = nn.matmul %qs, %ks {onnx.origins = ["qk"]} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %a = nn.add %s, %mask {onnx.origins = ["mask"]} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %a {axis = 3 : i64, onnx.origins = ["softmax"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %e = nn.equal %p, %p {onnx.origins = ["isnan"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %n = nn.not %e {onnx.origins = ["isnan"]} : (tensor<1x2x4x4xi1>) -> tensor<1x2x4x4xi1>
  %g = nn.where %n, %z, %p {onnx.origins = ["guard"]} : (tensor<1x2x4x4xi1>, tensor<1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = nn.matmul %g, %v {onnx.origins = ["pv"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @torch_sdpa
// CHECK-NEXT:    %[[A:.*]] = nn.attention %q, %k, %v, %mask {onnx.origins = ["mul_q", "mul_k", "qk", "mask", "softmax", "isnan", "guard", "pv"], scale = 1.250000e-01 : f64, nan_to_zero = 1 : i64}
// CHECK-NEXT:    func.return %[[A]]

// -----

// Must not fire: the guard puts 1, not 0, in place of NaN.
func.func @guard_not_zero(%q: tensor<1x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %s = nn.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %p = nn.softmax %s {axis = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %e = nn.equal %p, %p : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xi1>
  %n = nn.not %e : (tensor<1x4x4xi1>) -> tensor<1x4x4xi1>
  %g = nn.where %n, %one, %p : (tensor<1x4x4xi1>, tensor<1xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = nn.matmul %g, %v : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %o : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @guard_not_zero
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax

// -----

// Must not fire: the NaN test reads the probabilities, but the where selects from another tensor.
func.func @guard_other_tensor(%q: tensor<1x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<1x4x8xf32>, %w: tensor<1x4x4xf32>) -> tensor<1x4x8xf32> {
  %z = nn.constant dense<0.0> : tensor<1xf32>
  %s = nn.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %p = nn.softmax %s {axis = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %e = nn.equal %p, %p : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xi1>
  %n = nn.not %e : (tensor<1x4x4xi1>) -> tensor<1x4x4xi1>
  %g = nn.where %n, %z, %w : (tensor<1x4x4xi1>, tensor<1xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = nn.matmul %g, %v : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %o : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @guard_other_tensor
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax

// -----

// Positive, BERT's kT = transpose(x, [0, 2, 3, 1]) of x [B, S, H, D]: k is one transpose of x
// with the composed permutation [0, 2, 1, 3], not kT transposed back.
func.func @bert_kt(%q: tensor<1x2x4x8xf32>, %x: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = nn.transpose %x {perm = array<i64: 0, 2, 3, 1>, onnx.origins = ["kt"]} : (tensor<1x4x2x8xf32>) -> tensor<1x2x8x4xf32>
  %s = nn.matmul %q, %kt {onnx.origins = ["qk"]} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %s {axis = 3 : i64, onnx.origins = ["softmax"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = nn.matmul %p, %v {onnx.origins = ["pv"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @bert_kt
// CHECK-NEXT:    %[[K:.*]] = nn.transpose %x {onnx.origins = ["kt"], perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.attention %q, %[[K]], %v {onnx.origins = ["qk", "softmax", "pv"], scale = 1.000000e+00 : f64}
// CHECK-NEXT:    func.return %[[A]]

// -----

// Positive, Swin's shifted windows: a position bias [2, 4, 4] then a window mask [3, 1, 4, 4]
// (both constants) -> one constant mask, their broadcast sum [3, 2, 4, 4], folded at compile
// time (the printer elides its values; test_fusion_passes checks them against onnxruntime).
func.func @two_masks(%q: tensor<3x2x4x8xf32>, %k: tensor<3x2x4x8xf32>, %v: tensor<3x2x4x8xf32>) -> tensor<3x2x4x8xf32> {
  %bias = nn.constant dense<1.0> : tensor<2x4x4xf32>
  %win = nn.constant dense<[[[[10.0, -100.0, 10.0, -100.0]]], [[[10.0, 10.0, 10.0, 10.0]]], [[[-100.0, 10.0, 10.0, 10.0]]]]> : tensor<3x1x1x4xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>, onnx.origins = ["kt"]} : (tensor<3x2x4x8xf32>) -> tensor<3x2x8x4xf32>
  %s = nn.matmul %q, %kt {onnx.origins = ["qk"]} : (tensor<3x2x4x8xf32>, tensor<3x2x8x4xf32>) -> tensor<3x2x4x4xf32>
  %b = nn.add %s, %bias {onnx.origins = ["bias"]} : (tensor<3x2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<3x2x4x4xf32>
  %m = nn.add %b, %win {onnx.origins = ["window"]} : (tensor<3x2x4x4xf32>, tensor<3x1x1x4xf32>) -> tensor<3x2x4x4xf32>
  %p = nn.softmax %m {axis = 3 : i64, onnx.origins = ["softmax"]} : (tensor<3x2x4x4xf32>) -> tensor<3x2x4x4xf32>
  %o = nn.matmul %p, %v {onnx.origins = ["pv"]} : (tensor<3x2x4x4xf32>, tensor<3x2x4x8xf32>) -> tensor<3x2x4x8xf32>
  func.return %o : tensor<3x2x4x8xf32>
}
// CHECK-LABEL: func.func @two_masks
// CHECK:         %[[M:.*]] = nn.constant {{.*}} : tensor<3x2x4x4xf32> {onnx.origins = ["bias", "window"]}
// CHECK-NEXT:    %[[A:.*]] = nn.attention %q, %k, %v, %[[M]] {onnx.origins = ["qk", "bias", "window", "softmax", "pv"], scale = 1.000000e+00 : f64}
// CHECK-NEXT:    func.return %[[A]]

// -----

// Must not fire: the second mask is an input, not a constant, so the two cannot become one
// mask at compile time (the Adds and the softmax stay).
func.func @two_masks_one_input(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %bias = nn.constant dense<1.0> : tensor<2x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %b = nn.add %s, %bias : (tensor<1x2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = nn.add %b, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %m {axis = 3 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @two_masks_one_input
// CHECK-NOT:     nn.attention
// CHECK:         nn.add
// CHECK-NEXT:    nn.add
// CHECK-NEXT:    nn.softmax

// -----

// Positive (torchvision swin_t, shifted window): the window mask is added through a view
// [2,1,2,2] -> [1,2,1,2,2]; it moves to the 4-d scores as a [2,1,2,2] constant, and with
// it the block is one nn.attention.
func.func @swin_mask_through_reshape(%q: tensor<2x1x2x4xf32>, %k: tensor<2x1x2x4xf32>, %v: tensor<2x1x2x4xf32>) -> tensor<2x1x2x4xf32> {
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x1x2x4xf32>) -> tensor<2x1x4x2xf32>
  %s = nn.matmul %q, %kt : (tensor<2x1x2x4xf32>, tensor<2x1x4x2xf32>) -> tensor<2x1x2x2xf32>
  %r5 = nn.reshape %s {onnx.origins = ["Reshape_16"]} : (tensor<2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32>
  %m = nn.constant dense<[[[[[0.0, -100.0], [0.0, 0.0]]], [[[1.0, 2.0], [3.0, 4.0]]]]]> : tensor<1x2x1x2x2xf32>
  %a5 = nn.add %r5, %m {onnx.origins = ["Add_11"]} : (tensor<1x2x1x2x2xf32>, tensor<1x2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32>
  %r4 = nn.reshape %a5 {onnx.origins = ["Reshape_17"]} : (tensor<1x2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %p = nn.softmax %r4 {axis = 3 : i64} : (tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %o = nn.matmul %p, %v : (tensor<2x1x2x2xf32>, tensor<2x1x2x4xf32>) -> tensor<2x1x2x4xf32>
  func.return %o : tensor<2x1x2x4xf32>
}
// CHECK-LABEL: func.func @swin_mask_through_reshape
// CHECK-NEXT:    %[[M:.*]] = nn.constant dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+02], [0.000000e+00, 0.000000e+00]]], {{\[\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]]]> : tensor<2x1x2x2xf32> {onnx.origins = ["Add_11"]}
// CHECK-NEXT:    %{{.*}} = nn.attention %q, %k, %v, %[[M]]
// CHECK-NOT:     nn.reshape
// CHECK-NOT:     nn.softmax

// -----

// Must not fire: the outer reshape does not undo the inner one (it merges other dims).
func.func @reshape_not_undone(%x: tensor<2x1x2x2xf32>) -> tensor<2x4xf32> {
  %r5 = nn.reshape %x : (tensor<2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32>
  %m = nn.constant dense<1.0> : tensor<1x2x1x2x2xf32>
  %a5 = nn.add %r5, %m : (tensor<1x2x1x2x2xf32>, tensor<1x2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32>
  %r2 = nn.reshape %a5 : (tensor<1x2x1x2x2xf32>) -> tensor<2x4xf32>
  func.return %r2 : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @reshape_not_undone
// CHECK-NEXT:    %r5 = nn.reshape %x
// CHECK:         %a5 = nn.add %r5, %m
// CHECK-NEXT:    %r2 = nn.reshape %a5
