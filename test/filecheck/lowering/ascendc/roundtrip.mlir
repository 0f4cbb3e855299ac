// RUN: autofusion-opt %s | autofusion-opt | filecheck %s
// RUN: autofusion-opt %s --print-op-generic | autofusion-opt | filecheck %s

// The ascendc dialect round-trips in pretty and generic form.
builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = ["o"], arg_names = ["in0", "out0"], num_inputs = 1 : i64, tiling = #ascendc.tiling<"vector", {total = 8 : i64}, {tileLength = 8 : i64}, []>} {
  ^bb0(%x: !ascendc.gm_addr, %y: !ascendc.gm_addr):
    %xg = ascendc.global_tensor %x {length = 8 : i64} : !ascendc.global<f32>
    %yg = ascendc.global_tensor %y {length = 8 : i64} : !ascendc.global<f32>
    %q = ascendc.queue {bytes = 32 : i64} : !ascendc.queue<VECIN, 2>
    %o = ascendc.queue {bytes = 32 : i64} : !ascendc.queue<VECOUT, 2>
    %t = ascendc.tbuf {bytes = 32 : i64} : !ascendc.tbuf
    ascendc.tile_loop attributes {extent = "block", total = 8 : i64} {
      %l = ascendc.alloc_tensor %q : !ascendc.queue<VECIN, 2> -> !ascendc.local<f32>
      ascendc.copy_in %l, %xg : !ascendc.local<f32>, !ascendc.global<f32>
      ascendc.enque %q, %l : !ascendc.queue<VECIN, 2>, !ascendc.local<f32>
      ascendc.yield
    } {
      %a = ascendc.deque %q : !ascendc.queue<VECIN, 2> -> !ascendc.local<f32>
      %r = ascendc.alloc_tensor %o : !ascendc.queue<VECOUT, 2> -> !ascendc.local<f32>
      %s = ascendc.tbuf_get %t : !ascendc.tbuf -> !ascendc.local<f32>
      ascendc.vscalar "Maxs" %s, %a {scalar = 0.5 : f64} : !ascendc.local<f32>, !ascendc.local<f32>
      ascendc.vbinary "Mul" %r, %s, %a : !ascendc.local<f32>, !ascendc.local<f32>, !ascendc.local<f32>
      ascendc.vunary "Exp" %r, %r : !ascendc.local<f32>, !ascendc.local<f32>
      ascendc.duplicate %s {scalar = 1.0 : f64} : !ascendc.local<f32>
      ascendc.enque %o, %r : !ascendc.queue<VECOUT, 2>, !ascendc.local<f32>
      ascendc.free_tensor %q, %a : !ascendc.queue<VECIN, 2>, !ascendc.local<f32>
      ascendc.yield
    } {
      %d = ascendc.deque %o : !ascendc.queue<VECOUT, 2> -> !ascendc.local<f32>
      ascendc.copy_out %yg, %d : !ascendc.global<f32>, !ascendc.local<f32>
      ascendc.free_tensor %o, %d : !ascendc.queue<VECOUT, 2>, !ascendc.local<f32>
      ascendc.yield
    }
    ascendc.return
  }
}
// CHECK:      ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = ["o"], arg_names = ["in0", "out0"], num_inputs = 1 : i64, tiling = #ascendc.tiling<"vector", {total = 8 : i64}, {tileLength = 8 : i64}, []>} {
// CHECK:        ascendc.queue {bytes = 32 : i64} : !ascendc.queue<VECIN, 2>
// CHECK:        ascendc.tile_loop attributes {extent = "block", total = 8 : i64} {
// CHECK:          ascendc.vscalar "Maxs" %{{.*}}, %{{.*}} {scalar = 5.000000e-01 : f64} : !ascendc.local<f32>, !ascendc.local<f32>
// CHECK-NEXT:     ascendc.vbinary "Mul"
// CHECK-NEXT:     ascendc.vunary "Exp"
// CHECK-NEXT:     ascendc.duplicate %{{.*}} {scalar = 1.000000e+00 : f64}
// CHECK:          ascendc.copy_out
// CHECK:        ascendc.return
