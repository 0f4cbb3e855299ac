// RUN: autofusion-opt %s --split-input-file -p canonicalize-nn,fuse-conv-bn-relu,assign-layout | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p "canonicalize-nn,fuse-conv-bn-relu,assign-layout{pointwise=true}" | filecheck %s --check-prefix=PW

// Propagation: 3x3 -> Relu -> 1x1 -> Relu -> 3x3 at 32 channels. The 3x3 convs take the
// blocked kernel by the measured rule. By default the 1x1 conv stays on gemm_1x1 (measured
// faster), so both its edges are NCHW and nothing is marked. With pointwise=true it joins,
// as both its edges can be blocked: the two inner edges cancel their reorder pairs, and the
// graph input and output are the boundaries (the first conv gathers x, the last stores NCHW).
func.func @chain(%x: tensor<1x32x14x14xf32>, %w3: tensor<32x32x3x3xf32>, %w1: tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32> {
  %a = nn.conv %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  %ar = nn.relu %a : (tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %b = nn.conv %ar, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32>
  %br = nn.relu %b : (tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %c = nn.conv %br, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  func.return %c : tensor<1x32x14x14xf32>
}
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    layout.summary = {blocked_convs = 2 : i64, reorders = 4 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK-NOT:     layout.x
// CHECK-NOT:     layout.y
// CHECK:         func.return
// PW-LABEL: func.func @chain(
// PW-SAME:    layout.summary = {blocked_convs = 3 : i64, reorders = 2 : i64, cancelled = 2 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// PW:         nn.conv %{{.*}} {layout.y = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>
// PW:         nn.conv %{{.*}} {layout.x = "nchw16c", layout.y = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>
// PW:         nn.conv %{{.*}} {layout.x = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>
// PW-NEXT:    func.return

// -----

// Residual: the second conv's Add reads its own input (the first conv's output) again, so
// that output and the sum are blocked together (the flat epilogue indexes y and the
// residual alike); the third conv reads the sum blocked and writes the graph output NCHW.
func.func @residual(%x: tensor<1x32x7x7xf32>, %w3: tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32> {
  %a = nn.conv %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  %b = nn.conv %a, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  %s = nn.add %b, %a : (tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  %sr = nn.relu %s : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  %c = nn.conv %sr, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  func.return %c : tensor<1x32x7x7xf32>
}
// CHECK-LABEL: func.func @residual(
// CHECK-SAME:    layout.summary = {blocked_convs = 3 : i64, reorders = 2 : i64, cancelled = 2 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK:         %[[A:.*]] = nn.conv %x, %w3 {layout.y = "nchw16c"
// CHECK:         fusion.kernel "conv_add_relu" [] (%[[A]], %w3)
// CHECK:           nn.conv %{{.*}} {layout.x = "nchw16c", layout.y = "nchw16c"
// CHECK:         nn.conv %{{.*}} {layout.x = "nchw16c", strides

// -----

// Boundaries (must not fire on these edges): a conv output read by a max pool (no blocked
// kernel) and one returned from the function stay NCHW; a 1x1 conv whose input is a graph
// input is not worth the blocked kernel even with pointwise=true (it would reorder
// inside), so it stays on the GEMM and its 3x3 reader gathers its NCHW output.
func.func @boundaries(%x: tensor<1x32x14x14xf32>, %w3: tensor<32x32x3x3xf32>, %w1: tensor<32x32x1x1xf32>) -> (tensor<1x32x7x7xf32>, tensor<1x32x14x14xf32>) {
  %a = nn.conv %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  %p = nn.max_pool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  %b = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32>
  %c = nn.conv %b, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  func.return %p, %c : tensor<1x32x7x7xf32>, tensor<1x32x14x14xf32>
}
// CHECK-LABEL: func.func @boundaries(
// CHECK-SAME:    layout.summary = {blocked_convs = 2 : i64, reorders = 4 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK-NOT:     layout.x
// CHECK-NOT:     layout.y
// CHECK:         func.return
// PW-LABEL: func.func @boundaries(
// PW-SAME:    layout.summary = {blocked_convs = 2 : i64, reorders = 4 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// PW-NOT:     layout.x
// PW-NOT:     layout.y
// PW:         func.return

// -----

// Must not fire: 24 channels between the convs (not whole 16-channel blocks, so the blocked
// buffer would outgrow the planned one; the 24-channel conv is also below the rule's 32
// output channels), and a kernel whose Softmax after the conv is not elementwise (it cannot
// run on blocked rows): its conv and the next run the blocked kernel on NCHW edges.
func.func @refused(%x: tensor<1x32x14x14xf32>, %w24: tensor<24x32x3x3xf32>, %w3: tensor<32x24x3x3xf32>, %w33: tensor<32x32x3x3xf32>) -> (tensor<1x32x14x14xf32>, tensor<1x32x14x14xf32>) {
  %a = nn.conv %x, %w24 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<24x32x3x3xf32>) -> tensor<1x24x14x14xf32>
  %b = nn.conv %a, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x14x14xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x14x14xf32>
  %c = fusion.kernel "conv_softmax" [] (%x, %w33) : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32> {
  ^bb0(%0: tensor<1x32x14x14xf32>, %1: tensor<32x32x3x3xf32>):
    %2 = nn.conv %0, %1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
    %3 = nn.softmax %2 {axis = 1 : i64} : (tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
    fusion.yield %3 : tensor<1x32x14x14xf32>
  }
  %d = nn.conv %c, %w33 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  func.return %b, %d : tensor<1x32x14x14xf32>, tensor<1x32x14x14xf32>
}
// CHECK-LABEL: func.func @refused(
// CHECK-SAME:    layout.summary = {blocked_convs = 2 : i64, reorders = 4 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK-NOT:     layout.x
// CHECK-NOT:     layout.y
// CHECK:         func.return

// -----

// Must not fire: a conv assign-precision made bf16 runs on the 16-bit GEMM core, not the
// blocked kernel, so its 3x3 neighbour keeps NCHW edges (it alone is blocked, x and y NCHW).
func.func @lowp(%x: tensor<1x32x7x7xf32>, %w3: tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32> {
  %a = nn.conv %x, %w3 {precision = "bf16", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  %b = nn.conv %a, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  func.return %b : tensor<1x32x7x7xf32>
}
// CHECK-LABEL: func.func @lowp(
// CHECK-SAME:    layout.summary = {blocked_convs = 1 : i64, reorders = 2 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK-NOT:     layout.x
// CHECK-NOT:     layout.y
// CHECK:         func.return

// -----

// Expand chains: an expand 1x1 conv + Relu6 on a 7x7 map whose only reader is a conv-chain
// kernel (depthwise 3x3 -> Relu6 -> 1x1, on the blocked band: more than 16 output channels)
// writes NCHW16c (gemm_1x1_b) and the chain's depthwise conv reads it so. Must not fire on
// the second block: 40 expand channels are not whole 16-channel blocks.
func.func @expand(%x: tensor<1x24x7x7xf32>, %we: tensor<32x24x1x1xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<24x32x1x1xf32>, %we2: tensor<40x24x1x1xf32>, %wd2: tensor<40x1x3x3xf32>, %wp2: tensor<24x40x1x1xf32>) -> (tensor<1x24x7x7xf32>, tensor<1x24x7x7xf32>) {
  %e = nn.conv %x, %we {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x7x7xf32>, tensor<32x24x1x1xf32>) -> tensor<1x32x7x7xf32>
  %er = nn.clip %e {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  %k = fusion.kernel "chain_conv_relu6_conv" ["dw", "act", "pw"] (%er, %wd, %wp) : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32> {
  ^bb0(%a: tensor<1x32x7x7xf32>, %b: tensor<32x1x3x3xf32>, %c: tensor<24x32x1x1xf32>):
    %d = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64} : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x7x7xf32>
    %m = nn.clip %d {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32>
    fusion.yield %p : tensor<1x24x7x7xf32>
  }
  %e2 = nn.conv %x, %we2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x7x7xf32>, tensor<40x24x1x1xf32>) -> tensor<1x40x7x7xf32>
  %k2 = fusion.kernel "chain_conv_relu6_conv" ["dw2", "act2", "pw2"] (%e2, %wd2, %wp2) : (tensor<1x40x7x7xf32>, tensor<40x1x3x3xf32>, tensor<24x40x1x1xf32>) -> tensor<1x24x7x7xf32> {
  ^bb0(%a: tensor<1x40x7x7xf32>, %b: tensor<40x1x3x3xf32>, %c: tensor<24x40x1x1xf32>):
    %d = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 40 : i64} : (tensor<1x40x7x7xf32>, tensor<40x1x3x3xf32>) -> tensor<1x40x7x7xf32>
    %m = nn.clip %d {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x40x7x7xf32>) -> tensor<1x40x7x7xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x40x7x7xf32>, tensor<24x40x1x1xf32>) -> tensor<1x24x7x7xf32>
    fusion.yield %p : tensor<1x24x7x7xf32>
  }
  func.return %k, %k2 : tensor<1x24x7x7xf32>, tensor<1x24x7x7xf32>
}
// CHECK-LABEL: func.func @expand(
// CHECK-SAME:    layout.summary = {blocked_convs = 0 : i64, reorders = 0 : i64, cancelled = 1 : i64, expand_chains = 1 : i64, fires = 0 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK:         fusion.kernel "conv_relu6" [] (%x, %we)
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      nn.conv %{{.*}} {layout.y = "nchw16c"
// CHECK:         fusion.kernel "chain_conv_relu6_conv" ["dw", "act", "pw"]
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      nn.conv %{{.*}} {layout.x = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>
// CHECK-NOT:     layout.
// CHECK:         func.return
// -----

// Fire modules (SqueezeNet): a 1x1 squeeze whose only readers are the two expand convs,
// their outputs concatenated along channels in 16-channel multiples. The first fire's concat
// feeds a max pool (ceil_mode, odd 9x9 map) that feeds the second fire's squeeze, so the
// first fire, its concat and the pool stay NCHW16c: the squeeze writes blocks from the NCHW
// input, the expands read and write blocks, the pool runs on blocks, the second squeeze reads
// them. The second fire's concat is the function's result (a non-blocked reader), so that
// fire stays NCHW and its squeeze is the region's exit (x blocked, y NCHW).
func.func @fires(%x: tensor<1x32x9x9xf32>, %ws: tensor<16x32x1x1xf32>, %we1: tensor<16x16x1x1xf32>, %we3: tensor<16x16x3x3xf32>) -> tensor<1x32x4x4xf32> {
  %s = nn.conv %x, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x9x9xf32>
  %e1 = nn.conv %s, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x9x9xf32>
  %e3 = nn.conv %s, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x9x9xf32>
  %c = nn.concat %e1, %e3 {axis = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<1x16x9x9xf32>) -> tensor<1x32x9x9xf32>
  %p = nn.max_pool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x32x9x9xf32>) -> tensor<1x32x4x4xf32>
  %s2 = nn.conv %p, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x4x4xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x4x4xf32>
  %f1 = nn.conv %s2, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %f3 = nn.conv %s2, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %c2 = nn.concat %f1, %f3 {axis = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x32x4x4xf32>
  func.return %c2 : tensor<1x32x4x4xf32>
}

// CHECK-LABEL: func.func @fires(
// CHECK-SAME:    layout.summary = {blocked_convs = 4 : i64, reorders = 1 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 1 : i64, blocked_pools = 1 : i64, blocked_stems = 0 : i64, gemm_readers = 0 : i64}
// CHECK-NEXT:    %s = nn.conv %x, %ws {layout.y = "nchw16c", strides
// CHECK-NEXT:    %e1 = nn.conv %s, %we1 {layout.x = "nchw16c", layout.y = "nchw16c", strides
// CHECK-NEXT:    %e3 = nn.conv %s, %we3 {layout.x = "nchw16c", layout.y = "nchw16c", strides
// CHECK-NEXT:    %c = nn.concat %e1, %e3 {axis = 1 : i64}
// CHECK-NEXT:    %p = nn.max_pool %c {layout.x = "nchw16c", kernel
// CHECK-NEXT:    %s2 = nn.conv %p, %ws {layout.x = "nchw16c", strides
// CHECK-NEXT:    %f1 = nn.conv %s2, %we1 {strides
// CHECK-NEXT:    %f3 = nn.conv %s2, %we3 {strides
// CHECK-NEXT:    %c2 = nn.concat %f1, %f3 {axis = 1 : i64}
// CHECK-NEXT:    func.return %c2

// -----

// A fire's concat read by a 1x1 conv into NCHW (SqueezeNet's classifier, 512 -> 1000 before
// the global pool): the concat stays blocked, the fire is blocked throughout and the
// classifier reads the blocks through gemm_1x1's B packing (layout.x only, no reorder:
// gemm_readers = 1). Must not fire on the second fire: its concat is also read by a 3x3
// conv the rule leaves on NCHW, so that fire, and its classifier, stay NCHW (it reads %x2:
// the same squeeze of %x would be %s again, merged by canonicalize-nn).
func.func @fire_classifier(%x: tensor<1x32x9x9xf32>, %x2: tensor<1x32x9x9xf32>, %ws: tensor<16x32x1x1xf32>, %we1: tensor<16x16x1x1xf32>, %we3: tensor<16x16x3x3xf32>, %wc: tensor<10x32x1x1xf32>, %w3: tensor<8x32x3x3xf32>) -> (tensor<1x10x9x9xf32>, tensor<1x10x9x9xf32>, tensor<1x8x9x9xf32>) {
  %s = nn.conv %x, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x9x9xf32>
  %e1 = nn.conv %s, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x9x9xf32>
  %e3 = nn.conv %s, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x9x9xf32>
  %c = nn.concat %e1, %e3 {axis = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<1x16x9x9xf32>) -> tensor<1x32x9x9xf32>
  %k = nn.conv %c, %wc {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<10x32x1x1xf32>) -> tensor<1x10x9x9xf32>
  %kr = nn.relu %k : (tensor<1x10x9x9xf32>) -> tensor<1x10x9x9xf32>
  %t = nn.conv %x2, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x9x9xf32>
  %f1 = nn.conv %t, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x9x9xf32>
  %f3 = nn.conv %t, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x9x9xf32>
  %d = nn.concat %f1, %f3 {axis = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<1x16x9x9xf32>) -> tensor<1x32x9x9xf32>
  %l = nn.conv %d, %wc {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<10x32x1x1xf32>) -> tensor<1x10x9x9xf32>
  %m = nn.conv %d, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<8x32x3x3xf32>) -> tensor<1x8x9x9xf32>
  func.return %kr, %l, %m : tensor<1x10x9x9xf32>, tensor<1x10x9x9xf32>, tensor<1x8x9x9xf32>
}
// CHECK-LABEL: func.func @fire_classifier(
// CHECK-SAME:    fires = 1 : i64, blocked_pools = 0 : i64, blocked_stems = 0 : i64, gemm_readers = 1 : i64}
// CHECK-NEXT:    %s = nn.conv %x, %ws {layout.y = "nchw16c", strides
// CHECK-NEXT:    %e1 = nn.conv %s, %we1 {layout.x = "nchw16c", layout.y = "nchw16c", strides
// CHECK-NEXT:    %e3 = nn.conv %s, %we3 {layout.x = "nchw16c", layout.y = "nchw16c", strides
// CHECK-NEXT:    %c = nn.concat %e1, %e3 {axis = 1 : i64}
// CHECK-NEXT:    %kr = fusion.kernel "conv_relu" [] (%c, %wc)
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      nn.conv %{{.*}} {layout.x = "nchw16c", strides
// CHECK:         %t = nn.conv %x2, %ws {strides
// CHECK-NEXT:    %f1 = nn.conv %t, %we1 {strides
// CHECK-NEXT:    %f3 = nn.conv %t, %we3 {strides
// CHECK-NEXT:    %d = nn.concat %f1, %f3 {axis = 1 : i64}
// CHECK-NEXT:    %l = nn.conv %d, %wc {strides
// CHECK-NEXT:    %m = nn.conv %d, %w3 {strides

// -----

// Must not fire: a 24-channel expand (its half of the concat is not whole 16-channel blocks,
// so a blocked concat would not be a slice), so the fire and its pool stay NCHW.
func.func @fire_refused(%x: tensor<1x32x9x9xf32>, %ws: tensor<16x32x1x1xf32>, %we1: tensor<24x16x1x1xf32>, %we3: tensor<16x16x3x3xf32>, %ws2: tensor<16x40x1x1xf32>) -> tensor<1x16x4x4xf32> {
  %s = nn.conv %x, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x9x9xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x9x9xf32>
  %e1 = nn.conv %s, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x9x9xf32>
  %e3 = nn.conv %s, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x9x9xf32>
  %c = nn.concat %e1, %e3 {axis = 1 : i64} : (tensor<1x24x9x9xf32>, tensor<1x16x9x9xf32>) -> tensor<1x40x9x9xf32>
  %p = nn.max_pool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x40x9x9xf32>) -> tensor<1x40x4x4xf32>
  %s2 = nn.conv %p, %ws2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x40x4x4xf32>, tensor<16x40x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %s2 : tensor<1x16x4x4xf32>
}
// CHECK-LABEL: func.func @fire_refused(
// CHECK-NOT:     layout.
// CHECK:         func.return

// -----

// Stems (SqueezeNet's 3 -> 64, 3x3/2): a conv with at most 4 input channels and whole
// 16-channel blocks of output whose only reader is a max pool that feeds a fire's squeeze
// writes NCHW16c from the NCHW image (direct_smallc_b), the pool runs on blocks and the
// squeeze reads them (here the exit: the fire's concat is the result). Must not fire on the
// second stem: its pool feeds a plain 3x3 conv, so stem and pool stay NCHW (it reads %x2:
// the same conv of %x would be %a again, merged by canonicalize-nn).
func.func @stems(%x: tensor<1x3x31x31xf32>, %x2: tensor<1x3x31x31xf32>, %w: tensor<32x3x3x3xf32>, %ws: tensor<16x32x1x1xf32>, %we1: tensor<16x16x1x1xf32>, %we3: tensor<16x16x3x3xf32>, %w3: tensor<32x32x3x3xf32>) -> (tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>) {
  %a = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x31x31xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x15x15xf32>
  %ar = nn.relu %a : (tensor<1x32x15x15xf32>) -> tensor<1x32x15x15xf32>
  %p = nn.max_pool %ar {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x32x15x15xf32>) -> tensor<1x32x7x7xf32>
  %s = nn.conv %p, %ws {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x7x7xf32>
  %e1 = nn.conv %s, %we1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x7x7xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x7x7xf32>
  %e3 = nn.conv %s, %we3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x7x7xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x7x7xf32>
  %c = nn.concat %e1, %e3 {axis = 1 : i64} : (tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x32x7x7xf32>
  %b = nn.conv %x2, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x31x31xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x15x15xf32>
  %q = nn.max_pool %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x32x15x15xf32>) -> tensor<1x32x7x7xf32>
  %d = nn.conv %q, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x7x7xf32>
  func.return %c, %d : tensor<1x32x7x7xf32>, tensor<1x32x7x7xf32>
}
// CHECK-LABEL: func.func @stems(
// CHECK-SAME:    layout.summary = {blocked_convs = 3 : i64, reorders = 3 : i64, cancelled = 0 : i64, expand_chains = 0 : i64, fires = 0 : i64, blocked_pools = 1 : i64, blocked_stems = 1 : i64, gemm_readers = 0 : i64}
// CHECK-NEXT:    %ar = fusion.kernel "conv_relu" [] (%x, %w)
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      nn.conv %{{.*}} {layout.y = "nchw16c", strides = array<i64: 2, 2>
// CHECK:         %p = nn.max_pool %ar {layout.x = "nchw16c", kernel
// CHECK-NEXT:    %s = nn.conv %p, %ws {layout.x = "nchw16c", strides
// CHECK-NEXT:    %e1 = nn.conv %s, %we1 {strides
// CHECK-NEXT:    %e3 = nn.conv %s, %we3 {strides
// CHECK-NEXT:    %c = nn.concat %e1, %e3 {axis = 1 : i64}
// CHECK-NEXT:    %b = nn.conv %x2, %w {strides
// CHECK-NEXT:    %q = nn.max_pool %b {kernel
// CHECK-NEXT:    %d = nn.conv %q, %w3 {strides
