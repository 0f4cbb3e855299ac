// RUN: not autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops 2>&1 | filecheck %s

// lower-nn-to-loops does not legalise behind the pipeline's back: an f16 contraction that
// did not go through legalize-contractions is refused, naming the op and the pass to run.
func.func @main(%a: tensor<2x3xf16>, %b: tensor<3x4xf16>) -> tensor<2x4xf16> {
  %y = nn.matmul %a, %b : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
  func.return %y : tensor<2x4xf16>
}
// CHECK: autofusion-opt: error: lower-nn-to-loops: nn.matmul on f16 has no library kernel; run legalize-contractions first
// CHECK-NOT: Traceback
