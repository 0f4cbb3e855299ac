// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=2 runtime_sizes=true}' | filecheck %s

// Positive: no broadcast, so the whole flat space is the run-time size (lead = rank).
func.func @main(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %z = fusion.kernel "ew" ["mul"] (%x, %y) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32> {
  ^bb0(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>):
    %0 = nn.mul %a, %b : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    fusion.yield %0 : tensor<4x6xf32>
  }
  func.return %z : tensor<4x6xf32>
}
// CHECK-LABEL: ascendc.kernel @af_kernel_0
// CHECK-SAME:    tiling = #ascendc.tiling<"vector", {outer = 24 : i64, outerMax = 24 : i64, inner = 1 : i64, lead = 2 : i64, {{.*}}}, {totalLength = 24 : i64, {{.*}}}, ["outer"]>}
// CHECK-NOT:     static_reason
// CHECK-NEXT:  ^{{.*}}
// CHECK-NEXT:    ascendc.global_tensor %{{.*}} {length = 24 : i64, runtime_length = "total"}
// CHECK-NEXT:    ascendc.global_tensor %{{.*}} {length = 24 : i64, runtime_length = "total"}
// CHECK-NEXT:    ascendc.global_tensor %{{.*}} {length = 24 : i64, runtime_length = "total"}

// -----

// Must not fire: %s varies along the leading dimension (a [4, 1] column broadcast along
// dim 1), so the kernel keeps compile-time sizes and says why.
func.func @main(%x: tensor<4x6xf32>, %s: tensor<4x1xf32>) -> tensor<4x6xf32> {
  %z = fusion.kernel "ew" ["mul"] (%x, %s) : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32> {
  ^bb0(%a: tensor<4x6xf32>, %b: tensor<4x1xf32>):
    %0 = nn.mul %a, %b : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
    fusion.yield %0 : tensor<4x6xf32>
  }
  func.return %z : tensor<4x6xf32>
}
// CHECK-LABEL: ascendc.kernel @af_kernel_0
// CHECK-SAME:    tiling = #ascendc.tiling<"vector", {total = 24 : i64, {{.*}}}, {{.*}}, []>, static_reason = "input 1 varies along the leading dimension"}
// CHECK-NEXT:  ^{{.*}}
// CHECK-NEXT:    ascendc.global_tensor %{{.*}} {length = 24 : i64} :
