// RUN: not autofusion-opt %s -p fuse,plan-buffers -t c 2>&1 | filecheck %s
// RUN: not autofusion-opt %s -t c 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not autofusion-opt %s -p convert-nn-to-buffers 2>&1 | filecheck %s --check-prefix=LOWER

// Dynamic shapes are not supported yet: xDSL stores '?' as INT64_MIN, which used to reach
// the C shape tables (exit 0). plan-buffers, the C lowering and the C target refuse it.
func.func @main(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %a = nn.relu %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return %a : tensor<?x16xf32>
}
// CHECK: autofusion-opt: error: plan-buffers: @main argument 0 has type tensor<?x16xf32>: dimension 0 is dynamic; dynamic shapes are not supported yet
// TARGET: autofusion-opt: error: c target: @main argument 0 has type tensor<?x16xf32>: dimension 0 is dynamic; dynamic shapes are not supported yet
// LOWER: autofusion-opt: error: convert-nn-to-buffers: @main argument 0 has type tensor<?x16xf32>: dimension 0 is dynamic
