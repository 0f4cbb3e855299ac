// RUN: autofusion-opt %s --split-input-file -p fold-batchnorm | filecheck %s

// Positive: scale/sqrt(var+eps) = [1, 1], so W' = W and b' = bias - mean = [0.5, -2].
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32> {onnx.origins = ["w"]}
  %s = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = nn.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %m = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %v = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv1"]} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.batch_norm %0, %s, %b, %m, %v {epsilon = 0.0 : f64, onnx.origins = ["bn1"]} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %1 : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_bn
// CHECK-NEXT:    %{{.*}} = nn.constant dense<[[[[1.000000e+00]]], [[[2.000000e+00]]]]> : tensor<2x1x1x1xf32> {onnx.origins = ["w", "bn1"]}
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[5.000000e-01, -2.000000e+00]> : tensor<2xf32> {onnx.origins = ["bn1"]}
// CHECK-NEXT:    %[[C:.*]] = nn.conv %x, %{{.*}}, %[[B]] {{.*}}onnx.origins = ["conv1", "bn1"]
// CHECK-NEXT:    func.return %[[C]]
// CHECK-NOT:   nn.batch_norm

// -----

// Must not fire: the statistics are function arguments, not constants.
func.func @stats_not_constant(%x: tensor<1x1x3x3xf32>, %s: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = nn.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv1"]} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.batch_norm %0, %s, %b, %b, %s {epsilon = 1.0e-05 : f64, onnx.origins = ["bn1"]} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %1 : tensor<1x2x3x3xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "not-a-constant", reason = "BatchNormalization scale/bias/mean/var are not all constants", nodes = ["conv1", "bn1"], decided_by = "structure"}]}
// CHECK-LABEL: func.func @stats_not_constant
// CHECK:         %[[C:.*]] = nn.conv %x
// CHECK-NEXT:    %{{.*}} = nn.batch_norm %[[C]]

// -----

// Must not fire: the conv output is also returned.
func.func @conv_has_other_users(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %s = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv1"]} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.batch_norm %0, %s, %s, %s, %s {epsilon = 1.0e-05 : f64, onnx.origins = ["bn1"]} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "multi-consumer", {{.*}}nodes = ["conv1", "bn1"], decided_by = "structure"}]}
// CHECK-LABEL: func.func @conv_has_other_users
// CHECK:         nn.batch_norm

// -----

// Positive (Gemm, trans_b): rows of B scale by s = [2, 0.5]; C' = (C - mean) * s + bias.
func.func @gemm_bn(%a: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %b = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %s = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %z = nn.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %v = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = nn.gemm %a, %b, %c {alpha = 1.0 : f64, beta = 1.0 : f64, trans_a = false, trans_b = true, onnx.origins = ["fc"]} : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %1 = nn.batch_norm %0, %s, %z, %z, %v {epsilon = 0.0 : f64, onnx.origins = ["bn"]} : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %1 : tensor<1x2xf32>
}
// CHECK-LABEL: func.func @gemm_bn
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[}}[2.000000e+00, 4.000000e+00], [1.500000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.constant dense<[2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = nn.gemm %a, %[[W]], %[[C]] {{.*}}onnx.origins = ["fc", "bn"]
// CHECK-NEXT:    func.return %[[G]]

// -----

// Positive (MatMul): columns of B scale by s = [2, 0.5]; the shift becomes a bias add.
func.func @matmul_bn(%a: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %b = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %m = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %v = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = nn.matmul %a, %b {onnx.origins = ["mm"]} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %1 = nn.batch_norm %0, %s, %m, %m, %v {epsilon = 0.0 : f64, onnx.origins = ["bn"]} : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %1 : tensor<1x2xf32>
}
// CHECK-LABEL: func.func @matmul_bn
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[}}[2.000000e+00, 1.000000e+00], [6.000000e+00, 2.000000e+00]]>
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<[-1.000000e+00, 0.000000e+00]>
// CHECK-NEXT:    %[[M:.*]] = nn.matmul %a, %[[W]] {onnx.origins = ["mm", "bn"]}
// CHECK-NEXT:    %[[R:.*]] = nn.add %[[M]], %[[S]] {onnx.origins = ["mm", "bn"]}
// CHECK-NEXT:    func.return %[[R]]

// -----

// Positive (no producer to fold into: DenseNet's BN on a Concat): x * s + shift with
// s = scale/sqrt(var+eps) = [2, 0.5] and shift = bias - mean*s = [-1, 0.5], as [C,1,1].
func.func @bn_on_concat(%x: tensor<1x1x2x2xf32>, %y: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %c = nn.concat %x, %y {axis = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %s = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = nn.constant dense<[1.0, 0.5]> : tensor<2xf32>
  %m = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %v = nn.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = nn.batch_norm %c, %s, %b, %m, %v {epsilon = 0.0 : f64, onnx.origins = ["norm1"]} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @bn_on_concat
// CHECK-NEXT:    %[[C:.*]] = nn.concat %x, %y
// CHECK-NEXT:    %[[S:.*]] = nn.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32> {onnx.origins = ["norm1"]}
// CHECK-NEXT:    %[[T:.*]] = nn.constant dense<{{\[\[\[}}-1.000000e+00]], {{\[\[}}5.000000e-01]]]> : tensor<2x1x1xf32> {onnx.origins = ["norm1"]}
// CHECK-NEXT:    %[[M:.*]] = nn.mul %[[C]], %[[S]] {onnx.origins = ["norm1"]}
// CHECK-NEXT:    %[[A:.*]] = nn.add %[[M]], %[[T]] {onnx.origins = ["norm1"]}
// CHECK-NEXT:    func.return %[[A]]
// CHECK-NOT:   nn.batch_norm

// -----

// Must not fire: a BN on a Concat whose statistics are arguments stays, with a refusal
// that names the BN alone.
func.func @bn_on_concat_stats_not_constant(%x: tensor<1x1x2x2xf32>, %y: tensor<1x1x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %c = nn.concat %x, %y {axis = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %b = nn.constant dense<[1.0, 0.5]> : tensor<2xf32>
  %0 = nn.batch_norm %c, %s, %b, %b, %s {epsilon = 1.0e-05 : f64, onnx.origins = ["norm1"]} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "not-a-constant", reason = "BatchNormalization scale/bias/mean/var are not all constants", nodes = ["norm1"], decided_by = "structure"}]}
// CHECK-LABEL: func.func @bn_on_concat_stats_not_constant
// CHECK:         %[[C:.*]] = nn.concat %x, %y
// CHECK:         %{{.*}} = nn.batch_norm %[[C]]
// CHECK-NOT:     nn.mul
