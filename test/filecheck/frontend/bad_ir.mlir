// Bad IR text is a parse error on one clear message, exit status 1, no traceback.
// RUN: not autofusion-opt %s 2>&1 | filecheck %s
// CHECK: autofusion-opt: error: {{.*}}bad_ir.mlir:{{[0-9]+}}:{{[0-9]+}}
// CHECK-NOT: Traceback
builtin.module {
  %0 = nn.relu %undefined : (tensor<4xf32>) -> tensor<4xf32>
}
