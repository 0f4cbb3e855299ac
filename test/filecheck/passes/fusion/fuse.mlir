// RUN: autofusion-opt %s --split-input-file -p fuse | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'fuse{aggressiveness=2}' | filecheck %s --check-prefix=AGG2
// RUN: autofusion-opt %s --split-input-file -p 'fuse{config="%S/inputs/blacklist_gelu.json"}' | filecheck %s --check-prefix=BL

// Positive: an elementwise chain with a broadcast operand becomes one kernel.
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  %a = nn.relu %x {onnx.origins = ["r"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = nn.sigmoid %a {onnx.origins = ["s"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = nn.add %b, %y {onnx.origins = ["a"]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "ew_relu_sigmoid_add" ["r", "s", "a"] (%x, %y) attributes {fusion.decided_by = "cost"}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[A:.*]] = nn.relu %[[X]]
// CHECK-NEXT:      %[[B:.*]] = nn.sigmoid %[[A]]
// CHECK-NEXT:      %[[C:.*]] = nn.add %[[B]], %[[Y]]
// CHECK-NEXT:      fusion.yield %[[C]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[K]]

// -----

// Positive: bias and GELU epilogues join the MatMul's kernel. Blacklisting Add->Gelu
// keeps the GELU out (BL).
func.func @matmul_epilogue(%x: tensor<2x4xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %m = nn.matmul %x, %w {onnx.origins = ["mm"]} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %a = nn.add %m, %b {onnx.origins = ["bias"]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %g = nn.gelu %a {approximate = "none", onnx.origins = ["gelu"]} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %g : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "matmul_add_gelu" ["mm", "bias", "gelu"] (%x, %w, %b)
// CHECK:           nn.matmul
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.gelu
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[K]]
// BL:          builtin.module attributes {fusion.refusals = [{code = "blacklisted", reason = "chain Add->Gelu is blacklisted in {{.*}}blacklist_gelu.json", nodes = ["bias", "gelu"], decided_by = "rules"}]
// BL-LABEL:    func.func @matmul_epilogue
// BL-NEXT:       %[[K:.*]] = fusion.kernel "matmul_add" ["mm", "bias"]
// BL:            %[[G:.*]] = nn.gelu %[[K]]
// BL-NEXT:       func.return %[[G]]

// -----

// Multi-consumer: %a is also returned, so the kernel yields it too (materialise).
func.func @materialise(%x: tensor<2x4xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %m = nn.matmul %x, %w {onnx.origins = ["mm"]} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %a = nn.add %m, %b {onnx.origins = ["bias"]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r = nn.relu %a {onnx.origins = ["relu"]} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %a, %r : tensor<2x8xf32>, tensor<2x8xf32>
}
// CHECK-LABEL: func.func @materialise
// CHECK-NEXT:    %[[A:.*]], %[[R:.*]] = fusion.kernel "matmul_add_relu" ["mm", "bias", "relu"] (%x, %w, %b)
// CHECK:           %[[A2:.*]] = nn.add
// CHECK-NEXT:      %[[R2:.*]] = nn.relu %[[A2]]
// CHECK-NEXT:      fusion.yield %[[A2]], %[[R2]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[A]], %[[R]]

// -----

// Recompute: %h (64x64) is an outer sum of two 64-element vectors, cheap to recompute
// and expensive to store. At aggressiveness 2 each reader's kernel recomputes it and it is
// never written (AGG2); at 1 the first reader's kernel materialises it for the second.
func.func @recompute(%u: tensor<64x1xf32>, %v: tensor<64xf32>, %z: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %h = nn.add %u, %v {onnx.origins = ["outer"]} : (tensor<64x1xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  %r = nn.relu %h {onnx.origins = ["relu"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = nn.exp %z {onnx.origins = ["exp"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = nn.mul %e, %h {onnx.origins = ["mul"]} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %r, %t : tensor<64x64xf32>, tensor<64x64xf32>
}
// CHECK-LABEL: func.func @recompute
// CHECK-NEXT:    %[[H:.*]], %[[R:.*]] = fusion.kernel "ew_add_relu" ["outer", "relu"] (%u, %v)
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = fusion.kernel "ew_exp_mul" ["exp", "mul"] (%z, %[[H]])
// CHECK:         func.return %[[R]], %[[T]]
// AGG2-LABEL:  func.func @recompute
// AGG2-NEXT:     %[[R:.*]] = fusion.kernel "ew_add_relu" ["outer", "relu"] (%u, %v)
// AGG2:          fusion.yield
// AGG2-NEXT:     }
// AGG2-NEXT:     %[[T:.*]] = fusion.kernel "ew_add_exp_mul" ["outer", "exp", "mul"] (%u, %v, %z)
// AGG2:          fusion.yield
// AGG2-NEXT:     }
// AGG2-NEXT:     func.return %[[R]], %[[T]]

// -----

// Must not fire: the add broadcasts %a (4) up to 3x4, so it would change the kernel's
// iteration shape.
func.func @broadcast_grows(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %a = nn.relu %x {onnx.origins = ["relu"]} : (tensor<4xf32>) -> tensor<4xf32>
  %b = nn.add %a, %y {onnx.origins = ["add"]} : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "shape-mismatch", {{.*}}nodes = ["relu", "add"], decided_by = "structure"}]
// CHECK-LABEL: func.func @broadcast_grows
// CHECK-NEXT:    %[[A:.*]] = nn.relu %x
// CHECK-NEXT:    %[[B:.*]] = nn.add %[[A]], %y
// CHECK-NEXT:    func.return %[[B]]

// -----

// A last-axis LayerNorm joins the MatMul kernel only at aggressiveness >= 2.
func.func @layernorm_epilogue(%x: tensor<2x4xf32>, %w: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %m = nn.matmul %x, %w {onnx.origins = ["mm"]} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %n = nn.layer_norm %m, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64, onnx.origins = ["ln"]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %n : tensor<2x8xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "aggressiveness", reason = "layernorm_epilogue needs aggressiveness >= 2 (configured 1)", nodes = ["mm", "ln"], decided_by = "rules"}]
// CHECK-LABEL: func.func @layernorm_epilogue
// CHECK-NEXT:    %[[M:.*]] = nn.matmul %x, %w
// CHECK-NEXT:    %[[N:.*]] = nn.layer_norm %[[M]], %g
// CHECK-NEXT:    func.return %[[N]]
// AGG2-LABEL:  func.func @layernorm_epilogue
// AGG2-NEXT:     %[[K:.*]] = fusion.kernel "matmul_layernorm" ["mm", "ln"] (%x, %w, %g)
