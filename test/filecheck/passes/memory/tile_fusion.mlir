// RUN: autofusion-opt %s -p 'tile-fusion{memory-limit-mb=0.015}' | filecheck %s
// RUN: not autofusion-opt %s -p 'tile-fusion{memory-limit-mb=0.001}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: autofusion-opt %s -p 'tile-fusion' | filecheck %s --check-prefix=PLAN
// RUN: autofusion-opt %s -p 'tile-fusion{memory-limit-mb=1}' | filecheck %s --check-prefix=PLAN

// Untiled, conv1's 16 KiB output and conv2's 4 KiB output are live together (20 KiB). With
// a 0.015 MiB (15728 B) limit the conv1 -> relu -> conv2 -> pool region is cut into 3
// tiles along H: each tile slices the rows of %x it needs (the 3x3 halo: tile 1 makes
// pooled rows [2, 5) from conv2 rows [4, 10), conv1 rows [7, 20) and input rows [6, 21)),
// keeps the top pad only in the first tile and the bottom pad only in the last, and a
// concat rebuilds the pooled tensor.

// PLAN: memory.arena_bytes = 20480 : i64

// CHECK-LABEL: func.func @main
// CHECK-SAME: memory.arena_bytes = 14592 : i64
// CHECK-NEXT: %w = nn.constant
// CHECK-NEXT: %0 = nn.slice %x {memory.tile = array<i64: 0, 3>, {{.*}}starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 4, 9, 32>, {{.*}} -> tensor<1x4x9x32xf32>
// CHECK-NEXT: %1 = nn.conv %0, %w {{{.*}}strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 1>, {{.*}} -> tensor<1x4x8x32xf32>
// CHECK-NEXT: %2 = nn.relu %1
// CHECK-NEXT: %3 = nn.conv %2, %w {{{.*}}strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 1>, {{.*}} -> tensor<1x4x4x16xf32>
// CHECK-NEXT: %4 = nn.max_pool %3 {{.*}} -> tensor<1x4x2x8xf32>
// CHECK-NEXT: %5 = nn.slice %x {memory.tile = array<i64: 1, 3>, {{.*}}starts = array<i64: 0, 0, 6, 0>, ends = array<i64: 1, 4, 21, 32>, {{.*}} -> tensor<1x4x15x32xf32>
// CHECK-NEXT: %6 = nn.conv %5, %w {{{.*}}strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, {{.*}} -> tensor<1x4x13x32xf32>
// CHECK-NEXT: %7 = nn.relu %6
// CHECK-NEXT: %8 = nn.conv %7, %w {{{.*}}strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 1>, {{.*}} -> tensor<1x4x6x16xf32>
// CHECK-NEXT: %9 = nn.max_pool %8 {{.*}} -> tensor<1x4x3x8xf32>
// CHECK-NEXT: %10 = nn.slice %x {{{.*}}starts = array<i64: 0, 0, 18, 0>, ends = array<i64: 1, 4, 32, 32>, {{.*}} -> tensor<1x4x14x32xf32>
// CHECK-NEXT: %11 = nn.conv %10, %w {{{.*}}strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 1, 1>, {{.*}} -> tensor<1x4x13x32xf32>
// CHECK:      %m = nn.concat %4, %9, %14 {memory.tile = array<i64: -1, 3>, memory.offsets = array<i64: {{[0-9]+}}>, axis = 2 : i64} : (tensor<1x4x2x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %u = nn.global_avg_pool %m

// ERR: error: tile-fusion: the intermediates do not fit in 0.001 MB (1048 bytes); the smallest memory limit autofusion can meet for this model is {{[0-9.]+}} MB ({{[0-9]+}} bytes)

func.func @main(%x: tensor<1x4x32x32xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.constant dense<0.1> : tensor<4x4x3x3xf32>
  %p = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x32x32xf32>
  %r = nn.relu %p : (tensor<1x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  %q = nn.conv %r, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x32x32xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x16x16xf32>
  %m = nn.max_pool %q {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x16x16xf32>) -> tensor<1x4x8x8xf32>
  %u = nn.global_avg_pool %m : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  func.return %u : tensor<1x4x1x1xf32>
}
