// RUN: autofusion-opt %s --split-input-file -p plan-buffers | filecheck %s

// In place: %c overwrites %b (its last use); must not alias: %b cannot take %a's bytes
// because %a is still read by the add.
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 512 : i64, memory.naive_bytes = 768 : i64, memory.lower_bound_bytes = 512 : i64
// CHECK-NEXT: %a = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %b = nn.sigmoid %a {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %c = nn.add %b, %a {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %d = nn.tanh %c :
// CHECK-NEXT: func.return %d
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = nn.relu %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = nn.sigmoid %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = nn.add %b, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %d = nn.tanh %c : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %d : tensor<4x16xf32>
}

// -----

// Reuse after death: %p (4 KiB) dies at %q; %s reuses its bytes. Pooling is not
// elementwise, so %q never overwrites its own input. Weights (nn.constant) and the
// function argument get no offsets.
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 5120 : i64, memory.naive_bytes = 7168 : i64, memory.lower_bound_bytes = 5120 : i64
// CHECK-NEXT: %w = nn.constant dense<5.000000e-01> : tensor<4x4x1x1xf32>{{$}}
// CHECK-NEXT: %p = nn.conv %x, %w {memory.offsets = array<i64: 0>, {{.*}}}
// CHECK-NEXT: %q = nn.max_pool %p {memory.offsets = array<i64: 4096>, {{.*}}}
// CHECK-NEXT: %s = nn.conv %q, %w {memory.offsets = array<i64: 0>, {{.*}}}
// CHECK-NEXT: %t = nn.relu %s {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %u = nn.global_avg_pool %t :
func.func @main(%x: tensor<1x4x16x16xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.constant dense<0.5> : tensor<4x4x1x1xf32>
  %p = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x16x16xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x16x16xf32>
  %q = nn.max_pool %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x8x8xf32>
  %s = nn.conv %q, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %t = nn.relu %s : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %u = nn.global_avg_pool %t : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  func.return %u : tensor<1x4x1x1xf32>
}

// -----

// No in-place when shapes differ (broadcast operand) or element sizes differ (cast), and a
// multi-result op whose second result is a function output records -1 for it.
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 192 : i64
// CHECK-NEXT: %a = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %r = nn.relu %y {memory.offsets = array<i64: 128>}
// CHECK-NEXT: %b = nn.add %r, %a {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %c = nn.cast %b {memory.offsets = array<i64: 128>}
// CHECK-NEXT: %s, %s_1 = nn.split %c {memory.offsets = array<i64: 0, -1>, axis = 0 : i64}
func.func @main(%x: tensor<4x8xf32>, %y: tensor<1x8xf32>) -> (tensor<2x8xf16>, tensor<2x8xf16>) {
  %a = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = nn.relu %y : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %b = nn.add %r, %a : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = nn.cast %b : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %s:2 = nn.split %c {axis = 0 : i64} : (tensor<4x8xf16>) -> (tensor<2x8xf16>, tensor<2x8xf16>)
  %t = nn.neg %s#0 : (tensor<2x8xf16>) -> tensor<2x8xf16>
  func.return %t, %s#1 : tensor<2x8xf16>, tensor<2x8xf16>
}

// -----

// A fusion.kernel of elementwise ops runs in place over its dying input; a kernel holding
// a conv does not.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %h = nn.relu %x {memory.offsets = array<i64: 128>}
// CHECK-NEXT: %k = fusion.kernel "conv_relu" ["c", "r"] (%h, %w) attributes {memory.offsets = array<i64: 0>}
// CHECK: %e = fusion.kernel "elementwise" ["s", "t"] (%k) attributes {memory.offsets = array<i64: 0>}
// CHECK: %g = nn.conv %e, %w {{.*}}group = 1 : i64}
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %h = nn.relu %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k = fusion.kernel "conv_relu" ["c", "r"] (%h, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  ^bb0(%a: tensor<1x2x4x4xf32>, %b: tensor<2x2x1x1xf32>):
    %0 = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %1 = nn.relu %0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    fusion.yield %1 : tensor<1x2x4x4xf32>
  }
  %e = fusion.kernel "elementwise" ["s", "t"] (%k) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  ^bb0(%a: tensor<1x2x4x4xf32>):
    %0 = nn.sigmoid %a : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %1 = nn.mul %0, %a : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    fusion.yield %1 : tensor<1x2x4x4xf32>
  }
  %g = nn.conv %e, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %g : tensor<1x2x4x4xf32>
}

// -----

// A reshape is a view of its operand: no offset, and the operand's slot stays reserved
// while the view is read (%b must not take %a's bytes: %r still reads them). %c then runs
// in place over %r's (= %a's) slot, where the whole buffer dies. A reshape of an argument
// is a view outside the arena.
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 512 : i64
// CHECK-NEXT: %a = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %r = nn.reshape %a : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT: %b = nn.sigmoid %a {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %q = nn.reshape %b : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT: %c = nn.add %r, %q {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %d = nn.neg %c {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %v = nn.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT: %e = nn.add %d, %v :
func.func @main(%x: tensor<4x16xf32>) -> tensor<64xf32> {
  %a = nn.relu %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = nn.reshape %a : (tensor<4x16xf32>) -> tensor<64xf32>
  %b = nn.sigmoid %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = nn.reshape %b : (tensor<4x16xf32>) -> tensor<64xf32>
  %c = nn.add %r, %q : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %d = nn.neg %c : (tensor<64xf32>) -> tensor<64xf32>
  %v = nn.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
  %e = nn.add %d, %v : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  func.return %e : tensor<64xf32>
}

// -----

// Runs of an operand are views at an offset (no offsets of their own): the gather of row 1
// (256 bytes in), the split pieces (at 0 and 256), the slice of rows 2..4 (at 512). The
// sigmoid, %a's last direct reader, may not run in place over %a while the views are read;
// the gather along the second axis and the strided slice are copies with slots of their own.
// CHECK-LABEL: func.func @main
// CHECK:      %a = nn.tanh %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %g = nn.gather %a, %one {axis = 0 : i64} :
// CHECK-NEXT: %p, %q = nn.split %a {axis = 0 : i64} :
// CHECK-NEXT: %r = nn.slice %a {starts = array<i64: 2, 0>, ends = array<i64: 4, 64>, steps = array<i64: 1, 1>} :
// CHECK-NEXT: %s = nn.sigmoid %a {memory.offsets = array<i64: {{[1-9][0-9]*}}>}
// CHECK-NEXT: %c = nn.gather %a, %one {memory.offsets = array<i64: {{[0-9]+}}>, axis = 1 : i64}
// CHECK-NEXT: %e = nn.slice %a {memory.offsets = array<i64: {{[0-9]+}}>, starts
func.func @main(%x: tensor<4x64xf32>) -> (tensor<64xf32>, tensor<1x64xf32>, tensor<3x64xf32>, tensor<2x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<2x64xf32>) {
  %one = nn.constant dense<1> : tensor<i64>
  %a = nn.tanh %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %g = nn.gather %a, %one {axis = 0 : i64} : (tensor<4x64xf32>, tensor<i64>) -> tensor<64xf32>
  %p, %q = nn.split %a {axis = 0 : i64} : (tensor<4x64xf32>) -> (tensor<1x64xf32>, tensor<3x64xf32>)
  %r = nn.slice %a {starts = array<i64: 2, 0>, ends = array<i64: 4, 64>, steps = array<i64: 1, 1>} : (tensor<4x64xf32>) -> tensor<2x64xf32>
  %s = nn.sigmoid %a : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %c = nn.gather %a, %one {axis = 1 : i64} : (tensor<4x64xf32>, tensor<i64>) -> tensor<4xf32>
  %e = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 4, 64>, steps = array<i64: 2, 1>} : (tensor<4x64xf32>) -> tensor<2x64xf32>
  %g2 = nn.relu %g : (tensor<64xf32>) -> tensor<64xf32>
  %p2 = nn.relu %p : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %q2 = nn.relu %q : (tensor<3x64xf32>) -> tensor<3x64xf32>
  %r2 = nn.relu %r : (tensor<2x64xf32>) -> tensor<2x64xf32>
  %s2 = nn.relu %s : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %c2 = nn.relu %c : (tensor<4xf32>) -> tensor<4xf32>
  %e2 = nn.relu %e : (tensor<2x64xf32>) -> tensor<2x64xf32>
  func.return %g2, %p2, %q2, %r2, %s2, %c2, %e2 : tensor<64xf32>, tensor<1x64xf32>, tensor<3x64xf32>, tensor<2x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<2x64xf32>
}
