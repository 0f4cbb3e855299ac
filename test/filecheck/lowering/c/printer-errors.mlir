// RUN: not autofusion-opt %s -t c 2>&1 | filecheck %s

// An op without a C form is an error naming it (no partial output, no traceback).
func.func @main(%x: memref<4xf32> {c.role = "input"}, %y: memref<4xf32> {c.role = "output"}) {
  %t = memref.alloca() : memref<4xf32>
  "memref.copy"(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
// CHECK: autofusion-opt: error: c target: no C form for op memref.alloca
// CHECK-NOT: Traceback
