// RUN: not autofusion-opt %s -t c 2>&1 | filecheck %s

// An epilogue whose arguments are not afrt_epilogue.fn's (clib.EPILOGUE_PARAMS; here `ld` is
// missing) is an error naming it, never a C function the runtime would call wrongly.
func.func private @k0_epilogue(%ctx: !clib.ptr, %out: !clib.ptr, %b: i64, %r0: i64, %r1: i64, %c0: i64, %c1: i64) attributes {c.epilogue} {
  func.return
}
func.func @main(%x: memref<4xf32> {c.role = "input"}, %y: memref<4xf32> {c.role = "output"}) {
  "memref.copy"(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
// CHECK: autofusion-opt: error: c target: epilogue @k0_epilogue: arguments !clib.ptr, !clib.ptr, i64, i64, i64, i64, i64 are not (void *, float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t)
// CHECK-NOT: Traceback
