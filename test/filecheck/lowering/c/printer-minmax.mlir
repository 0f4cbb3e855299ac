// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s

// NaN-propagating max / min in C. Against a constant bound (Relu, Clip), which is never NaN,
// one unordered compare: !(v <= lo) keeps a NaN v as the general form does, and GCC
// vectorises it in mask registers. Between two tensors either may be NaN: the general form.
func.func @main(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %0 = fusion.kernel "clip" ["c"] (%x) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %c = nn.clip %a {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<4x64xf32>) -> tensor<4x64xf32>
    fusion.yield %c : tensor<4x64xf32>
  }
  %1 = nn.max %x, %y : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  func.return %0, %1 : tensor<4x64xf32>, tensor<4x64xf32>
}

// CHECK:       static void k0_clip(
// CHECK:         const float [[A:v[0-9]+]] = {{v[0-9]+}}[{{.*}}];
// CHECK-NEXT:    const float [[LO:v[0-9]+]] = !([[A]] <= 0x0.0p+0f) ? [[A]] : 0x0.0p+0f;
// CHECK-NEXT:    const float {{v[0-9]+}} = !([[LO]] >= 0x1.8000000000000p+2f) ? [[LO]] : 0x1.8000000000000p+2f;
// CHECK:       static void op1_max(
// CHECK:         const float [[P:v[0-9]+]] = {{v[0-9]+}}[{{.*}}];
// CHECK-NEXT:    const float [[Q:v[0-9]+]] = {{v[0-9]+}}[{{.*}}];
// CHECK-NEXT:    const float {{v[0-9]+}} = ([[P]] > [[Q]] || [[P]] != [[P]]) ? [[P]] : [[Q]];
