// RUN: autofusion-opt %s --split-input-file -p plan-buffers | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'plan-buffers{concat-inplace=false}' | filecheck %s --check-prefix=OFF

// In place: both operands are written straight into their slices of %c (256 bytes each,
// at 0 and 256): %a and %b have the offsets of the slices, the concat is marked 1, 1, and
// the lower bound counts the three tensors once (512 bytes, not 1024).
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 512 : i64, memory.naive_bytes = 1024 : i64, memory.lower_bound_bytes = 512 : i64
// CHECK-NEXT: %a = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %b = nn.sigmoid %x {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %c = nn.concat %a, %b {memory.offsets = array<i64: 0>, memory.concat_inplace = array<i64: 1, 1>, axis = 1 : i64}
// CHECK-NEXT: %d = nn.tanh %c :
// OFF-LABEL: func.func @main
// OFF-SAME: memory.arena_bytes = 1024 : i64, memory.naive_bytes = 1024 : i64, memory.lower_bound_bytes = 1024 : i64
// OFF: %c = nn.concat %a, %b {memory.offsets = array<i64: {{[0-9]+}}>, axis = 1 : i64}
func.func @main(%x: tensor<1x4x16xf32>) -> tensor<1x8x16xf32> {
  %a = nn.relu %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %b = nn.sigmoid %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x8x16xf32>
  %d = nn.tanh %c : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %d : tensor<1x8x16xf32>
}

// -----

// Must not fire: a dim before the axis is 2, so a slice is not one contiguous range.
// CHECK-LABEL: func.func @main
// CHECK: %c = nn.concat %a, %b {memory.offsets = array<i64: {{[0-9]+}}>, axis = 1 : i64}
// CHECK-NOT: concat_inplace
func.func @main(%x: tensor<2x4x16xf32>) -> tensor<2x8x16xf32> {
  %a = nn.relu %x : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %b = nn.sigmoid %x : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %c = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %d = nn.tanh %c : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  func.return %d : tensor<2x8x16xf32>
}

// -----

// Per operand: the argument %x, the operand read twice (%a) and the operand that shares
// its buffer with another one (%v, a view of %b, next to %b) keep the copy (0); %e is
// written in place at its slice (5 x 256 bytes after the concat's offset 0). %a is read
// again later by %f: its own slot stays apart from %c's.
// CHECK-LABEL: func.func @main
// CHECK: %e = nn.exp %x {memory.offsets = array<i64: 1280>}
// CHECK-NEXT: %c = nn.concat %x, %a, %a, %b, %v, %e {memory.offsets = array<i64: 0>, memory.concat_inplace = array<i64: 0, 0, 0, 0, 0, 1>, axis = 1 : i64}
func.func @main(%x: tensor<1x4x16xf32>) -> (tensor<1x24x16xf32>, tensor<1x4x16xf32>) {
  %a = nn.relu %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %b = nn.sigmoid %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %v = nn.reshape %b : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %e = nn.exp %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c = nn.concat %x, %a, %a, %b, %v, %e {axis = 1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x24x16xf32>
  %d = nn.tanh %c : (tensor<1x24x16xf32>) -> tensor<1x24x16xf32>
  %f = nn.neg %a : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  func.return %d, %f : tensor<1x24x16xf32>, tensor<1x4x16xf32>
}

// -----

// Chained (DenseNet-style): %c1 = concat(%a, %b) is itself written in place into %c2, so
// %a, %b, %c1 and %e all sit inside %c2's 1024 bytes (%e at its slice, 512 bytes in). An
// operand feeding two concats (%b also feeds %c3) is written in place into the first
// only; the second copies it (0) and takes %b2 in place (1). Lower bound: %c2's slot and
// %c3's slot, both live at %c3 (1024 + 512).
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 1536 : i64, memory.naive_bytes = 3328 : i64, memory.lower_bound_bytes = 1536 : i64
// CHECK-NEXT: %a = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %b = nn.sigmoid %x {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %c1 = nn.concat %a, %b {memory.offsets = array<i64: 0>, memory.concat_inplace = array<i64: 1, 1>, axis = 1 : i64}
// CHECK-NEXT: %e = nn.exp %c1 {memory.offsets = array<i64: 512>}
// CHECK-NEXT: %c2 = nn.concat %c1, %e {memory.offsets = array<i64: 0>, memory.concat_inplace = array<i64: 1, 1>, axis = 1 : i64}
// CHECK-NEXT: %b2 = nn.neg %x {memory.offsets = array<i64: 1280>}
// CHECK-NEXT: %c3 = nn.concat %b, %b2 {memory.offsets = array<i64: 1024>, memory.concat_inplace = array<i64: 0, 1>, axis = 1 : i64}
func.func @main(%x: tensor<1x4x16xf32>) -> (tensor<1x12x16xf32>, tensor<1x8x16xf32>) {
  %a = nn.relu %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %b = nn.sigmoid %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c1 = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x8x16xf32>
  %e = nn.exp %c1 : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %c2 = nn.concat %c1, %e {axis = 1 : i64} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x16x16xf32>
  %b2 = nn.neg %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c3 = nn.concat %b, %b2 {axis = 1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x8x16xf32>
  %s = nn.slice %c2 {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 12, 16>, axes = array<i64: 0, 1, 2>, steps = array<i64: 1, 1, 1>} : (tensor<1x16x16xf32>) -> tensor<1x12x16xf32>
  %t = nn.tanh %c3 : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %s, %t : tensor<1x12x16xf32>, tensor<1x8x16xf32>
}
