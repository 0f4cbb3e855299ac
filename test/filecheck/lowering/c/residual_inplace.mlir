// RUN: autofusion-opt %s -p 'plan-buffers,convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops' | filecheck %s
// RUN: autofusion-opt %s -p 'plan-buffers,convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{fuse_epilogues=false}' | filecheck %s --check-prefix=COPY
// RUN: autofusion-opt %s -p 'plan-buffers,convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops' -t c | filecheck %s --check-prefix=C

// A conv_add_relu kernel planned over its residual (memory.residual_inplace, operand 1): its
// function marks arguments 1 (residual) and 2 (output) as sharing bytes. With the built-in
// clamp epilogue on the GEMM core (gemm_1x1) the residual buffer goes to the call as is, the
// output's own buffer: the same arena bytes.
// CHECK-LABEL: func.func private @k2_conv_add_relu(
// CHECK-SAME:    %[[X:.*]]: memref<1x4x4x4xf32>, %[[R:.*]]: memref<1x4x4x4xf32>, %[[Y:.*]]: memref<1x4x4x4xf32>)
// CHECK-SAME:    c.alias_args = array<i64: 1, 2>
// CHECK-NEXT:    %[[W:.*]] = memref.get_global
// CHECK-NEXT:    %[[EP:.*]], %[[CTX:.*]] = "clib.clamp_epilogue"(%[[R]])
// CHECK-NEXT:    "clib.conv2d"(%[[X]], %[[W]], %[[Y]], %[[EP]], %[[CTX]]) <{{.*}}algo = "gemm_1x1"
// CHECK-NEXT:    func.return

// Any other lowering (here: epilogues not fused) reads a copy of the residual made first.
// COPY-LABEL: func.func private @k2_conv_add_relu(
// COPY-SAME:    %{{.*}}: memref<1x4x4x4xf32>, %[[R:.*]]: memref<1x4x4x4xf32>, %{{.*}}: memref<1x4x4x4xf32>)
// COPY-NEXT:    %[[T:.*]] = memref.alloc()
// COPY-NEXT:    "memref.copy"(%[[R]], %[[T]])

// The C signature drops restrict on exactly those two arguments; main passes one arena slot.
// C:      static void k2_conv_add_relu(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const float *restrict v0, const float *v1, float *v2) {
// C-LABEL: static void af_graph(
// C:       int8_t *[[ARENA:v[0-9]+]] = (int8_t *)m->bufs[0];
// C-NEXT:  float *[[RES:v[0-9]+]] = (float *)([[ARENA]]);
// C:       float *[[OUT:v[0-9]+]] = (float *)([[ARENA]]);
// C-NEXT:  k2_conv_add_relu(m->weights, m->scratch, m->scratch_bytes, v{{[0-9]+}}, [[RES]], [[OUT]])

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

