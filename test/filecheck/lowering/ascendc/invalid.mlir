// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

builtin.module {
  ascendc.kernel @k attributes {kind = "scalar", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = {}} {
    ascendc.return
  }
}
// CHECK: 'ascendc.kernel': unknown kind 'scalar'

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = {}} {
    %q = ascendc.queue {bytes = 30 : i64} : !ascendc.queue<VECIN, 2>
    ascendc.return
  }
}
// CHECK: 'ascendc.queue': buffer bytes must be a multiple of 32

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = ["a"], num_inputs = 0 : i64, tiling = {}} {
    ascendc.return
  }
}
// CHECK: 'ascendc.kernel': 0 block arguments but 1 names

// -----

builtin.module {
  ascendc.kernel @k attributes {kind = "vector", pattern = "p", origins = [], arg_names = [], num_inputs = 0 : i64, tiling = {}} {
    %t = ascendc.tbuf {bytes = 32 : i64} : !ascendc.tbuf
    %s = ascendc.tbuf_get %t : !ascendc.tbuf -> !ascendc.local<f32>
    ascendc.vunary "Tan" %s, %s : !ascendc.local<f32>, !ascendc.local<f32>
    ascendc.return
  }
}
// CHECK: 'ascendc.vunary': unknown function Tan
