// RUN: autofusion-opt %s --split-input-file -p plan-buffers | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'plan-buffers{residual-inplace=false}' | filecheck %s --check-prefix=OFF

// In place: the conv_add_relu kernel adds %r (its operand 1), which dies there, so its result
// takes %r's slot (offset 0) and the kernel records memory.residual_inplace = [1].
// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 512 : i64
// CHECK:      %r = nn.relu %x {memory.offsets = array<i64: 0>}
// CHECK-NEXT: %a = nn.sigmoid %r {memory.offsets = array<i64: 256>}
// CHECK-NEXT: %k = fusion.kernel "conv_add_relu" ["c"] (%a, %r) attributes {memory.offsets = array<i64: 0>, memory.residual_inplace = array<i64: 1>}
// OFF-LABEL: func.func @main
// OFF-SAME:  memory.arena_bytes = 768 : i64
// OFF:       %k = fusion.kernel "conv_add_relu" ["c"] (%a, %r) attributes {memory.offsets = array<i64: 512>}
func.func @main(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %r = nn.relu %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %a = nn.sigmoid %r : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %k = fusion.kernel "conv_add_relu" ["c"] (%a, %r) : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  ^bb0(%i: tensor<1x4x4x4xf32>, %res: tensor<1x4x4x4xf32>):
    %w = nn.constant dense<0.25> : tensor<4x4x1x1xf32>
    %c = nn.conv %i, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
    %s = nn.add %c, %res : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %y = nn.relu %s : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    fusion.yield %y : tensor<1x4x4x4xf32>
  }
  %t = nn.tanh %k : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %t : tensor<1x4x4x4xf32>
}

// -----

// Must not fire: the residual is also the conv's input (the conv reads all of it before any
// output is final), and in the second kernel the residual %r is still read by the mul.
// CHECK-LABEL: func.func @main
// CHECK:     %k = fusion.kernel "conv_add" ["c"] (%r) attributes {memory.offsets = array<i64: 256>}
// CHECK:     %k2 = fusion.kernel "conv_add" ["c2"] (%k, %r) attributes {memory.offsets = array<i64: 512>}
// CHECK-NOT: memory.residual_inplace
func.func @main(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %r = nn.relu %x : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %k = fusion.kernel "conv_add" ["c"] (%r) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  ^bb0(%i: tensor<1x4x4x4xf32>):
    %w = nn.constant dense<0.25> : tensor<4x4x1x1xf32>
    %c = nn.conv %i, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
    %s = nn.add %c, %i : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    fusion.yield %s : tensor<1x4x4x4xf32>
  }
  %k2 = fusion.kernel "conv_add" ["c2"] (%k, %r) : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  ^bb0(%i: tensor<1x4x4x4xf32>, %res: tensor<1x4x4x4xf32>):
    %w = nn.constant dense<0.25> : tensor<4x4x1x1xf32>
    %c = nn.conv %i, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
    %s = nn.add %c, %res : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    fusion.yield %s : tensor<1x4x4x4xf32>
  }
  %m = nn.mul %k2, %r : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %m : tensor<1x4x4x4xf32>
}
