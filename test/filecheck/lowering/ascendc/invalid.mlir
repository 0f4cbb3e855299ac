// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module {
  ascendc.kernel @k attributes {kind = "scalar", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"vector", {}, {}, []>} {
    ascendc.return
  }
}
// CHECK: 'ascendc.kernel': unknown kind 'scalar'

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"vector", {}, {}, []>} {
    %q = ascendc.queue {bytes = 30 : i64} : !ascendc.queue<VECIN, 2>
    ascendc.return
  }
}
// CHECK: 'ascendc.queue': buffer bytes must be a multiple of 32

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = ["a"], num_inputs = 0 : i64, tiling = #ascendc.tiling<"vector", {}, {}, []>} {
    ascendc.return
  }
}
// CHECK: 'ascendc.kernel': 0 block arguments but 1 names

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"vector", {}, {}, []>} {
    %t = ascendc.tbuf {bytes = 32 : i64} : !ascendc.tbuf
    %s = ascendc.tbuf_get %t : !ascendc.tbuf -> !ascendc.local<f32>
    ascendc.vunary "Tan" %s, %s : !ascendc.local<f32>, !ascendc.local<f32>
    ascendc.return
  }
}
// CHECK: 'ascendc.vunary': unknown function Tan

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"tiles", {}, {}, []>} {
    ascendc.return
  }
}
// CHECK: #ascendc.tiling: unknown kind 'tiles'

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"cube", {}, {}, []>} {
    ascendc.return
  }
}
// CHECK: 'ascendc.kernel': a vector kernel with cube tiling

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = #ascendc.tiling<"rows", {rows = 4 : i64}, {}, ["outer"]>} {
    ascendc.return
  }
}
// CHECK: #ascendc.tiling: run-time size outer is not an input
