// RUN: not autofusion-opt %s -t c 2>&1 | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=LOWERED

// Targets only print: nn IR given to -t c is an error naming the op and the -p to run.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nn.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: autofusion-opt: error: c target: op nn.relu in @main is not lowered; the c target only prints lowered IR: run -p 'convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops' first
// CHECK-NOT: Traceback

// After the backend's lowering passes the same module prints.
// LOWERED: int af_run(af_model *m, const void *const *inputs, void *const *outputs)
