// RUN: autofusion-opt %s --split-input-file -p 'assign-precision{bf16_ops=MatMul,Conv}' | filecheck %s

// Positive: the casts sit where a bf16 contraction's input comes from an fp32 producer. The
// conv reads the fp32 Relu output (x is cast) and a weight stored bf16 (w is not); the
// attention-style MatMul multiplies two activations (both cast); bias and Add stay fp32.
func.func @boundaries(%i: tensor<1x2x3x3xf32>, %q: tensor<4x8xf32>, %k: tensor<8x4xf32>) -> (tensor<1x2x3x3xf32>, tensor<4x4xf32>) {
  %r = nn.relu %i : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %w = nn.constant dense<0.5> : tensor<2x2x1x1xf32>
  %b = nn.constant dense<0.25> : tensor<2xf32>
  %c = nn.conv %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %s = nn.matmul %q, %k : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %o = nn.add %s, %s : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %c, %o : tensor<1x2x3x3xf32>, tensor<4x4xf32>
}
// CHECK-LABEL: func.func @boundaries
// CHECK-NEXT:    %[[R:.*]] = nn.relu %i : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>{{$}}
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<5.000000e-01> : tensor<2x2x1x1xf32> {precision.storage = "bf16"}
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<2.500000e-01> : tensor<2xf32>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.conv %[[R]], %[[W]], %[[B]] {{.*}}precision = "bf16", precision.casts = ["x"], strides = {{.*}}}
// CHECK-NEXT:    %[[S:.*]] = nn.matmul %q, %k {precision = "bf16", precision.casts = ["a", "b"]}
// CHECK-NEXT:    %{{.*}} = nn.add %[[S]], %[[S]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>{{$}}

// -----

// Must not fire: fp32-only ops get no casts (Gemm is not listed), an f16 MatMul keeps its own
// type, and an op rolled back to fp32 loses a stale cast list.
func.func @fp32_only(%x: tensor<2x3xf32>, %h: tensor<2x3xf16>, %g: tensor<3x2xf16>) -> (tensor<2x2xf32>, tensor<2x2xf16>, tensor<2x2xf32>) {
  %w = nn.constant dense<1.0> : tensor<3x2xf32>
  %0 = nn.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = nn.matmul %h, %g : (tensor<2x3xf16>, tensor<3x2xf16>) -> tensor<2x2xf16>
  %2 = nn.matmul %x, %w {precision = "fp32", precision.casts = ["a"]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %0, %1, %2 : tensor<2x2xf32>, tensor<2x2xf16>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @fp32_only
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<1.000000e+00> : tensor<3x2xf32>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.gemm %x, %[[W]] {{{[^}]*}}} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.matmul %h, %g : (tensor<2x3xf16>, tensor<3x2xf16>) -> tensor<2x2xf16>{{$}}
// CHECK-NEXT:    %{{.*}} = nn.matmul %x, %[[W]] {precision = "fp32"} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>{{$}}
