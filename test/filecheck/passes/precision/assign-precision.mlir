// RUN: autofusion-opt %s --split-input-file -p 'assign-precision{bf16_ops=MatMul fp16_ops=Conv}' | filecheck %s

// Positive: the MatMul weight is stored bf16, the Conv weight fp16; the ops record the decision.
func.func @weights(%x: tensor<2x3xf32>, %i: tensor<1x1x3x3xf32>) -> (tensor<2x2xf32>, tensor<1x2x3x3xf32>) {
  %w = nn.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %k = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %0 = nn.matmul %x, %w {onnx.origins = ["mm"]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = nn.conv %i, %k {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv"]} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1 : tensor<2x2xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @weights
// CHECK-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<3x2xf32> {precision.storage = "bf16"}
// CHECK-NEXT:    %[[K:.*]] = nn.constant {{.*}} : tensor<2x1x1x1xf32> {precision.storage = "fp16"}
// CHECK-NEXT:    %{{.*}} = nn.matmul %x, %[[W]] {onnx.origins = ["mm"], precision = "bf16", precision.casts = ["a"]}
// CHECK-NEXT:    %{{.*}} = nn.conv %i, %[[K]] {{.*}}precision = "fp16", precision.casts = ["x"], strides = {{.*}}}

// -----

// Must not fire on the constant: it is also read by an Add (an fp32 op), and as the
// activation (first) operand of a MatMul; the MatMul still records its decision.
func.func @shared_constant(%x: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) {
  %w = nn.constant dense<1.5> : tensor<3x3xf32>
  %0 = nn.matmul %w, %x {onnx.origins = ["mm"]} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %1 = nn.add %x, %w : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %0, %1 : tensor<3x3xf32>, tensor<3x3xf32>
}
// CHECK-LABEL: func.func @shared_constant
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<1.500000e+00> : tensor<3x3xf32>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.matmul %[[W]], %x {onnx.origins = ["mm"], precision = "bf16", precision.casts = ["a", "b"]}

// -----

// Must not override: an op that already carries a decision (a rollback's precision = "fp32")
// keeps it, and its weight stays fp32.
func.func @kept_fp32(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %w = nn.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32> {precision.storage = "bf16"}
  %0 = nn.matmul %x, %w {onnx.origins = ["mm"], precision = "fp32"} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
// CHECK-LABEL: func.func @kept_fp32
// CHECK-NEXT:    %[[W:.*]] = nn.constant {{.*}} : tensor<3x2xf32>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.matmul %x, %[[W]] {onnx.origins = ["mm"], precision = "fp32"} :
