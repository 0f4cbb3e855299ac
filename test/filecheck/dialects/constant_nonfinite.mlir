// Float constants holding inf, -inf, NaN or -0.0 print as a raw little-endian hex string, the
// one dense syntax that xDSL 0.75 parses back bit-exactly (it reads a hex *element* of a float
// list, such as `dense<[0x7F800000]>`, as the integer 2139095040). The generic printer is
// xDSL's own and still writes hex elements, so only the pretty form is round-tripped here.
// RUN: autofusion-opt %s | autofusion-opt | filecheck %s

// CHECK-LABEL: func.func @nonfinite() -> tensor<4xf32> {
// CHECK-NEXT:    %special = nn.constant dense<"0x0000807F000080FF0000C07F00000080"> : tensor<4xf32>
// CHECK-NEXT:    %inf = nn.constant dense<"0x0000807F"> : tensor<f32>
// CHECK-NEXT:    %splat = nn.constant dense<"0x0000C07F0000C07F0000C07F0000C07F"> : tensor<2x2xf32>
// CHECK-NEXT:    %finite = nn.constant dense<[1.000000e+00, -0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return %special : tensor<4xf32>
func.func @nonfinite() -> tensor<4xf32> {
  %special = nn.constant dense<"0x0000807F000080FF0000C07F00000080"> : tensor<4xf32>
  %inf = nn.constant dense<"0x0000807F"> : tensor<f32>
  %splat = nn.constant dense<"0x0000C07F"> : tensor<2x2xf32>
  %finite = nn.constant dense<[1.0, -0.0]> : tensor<2xf32>
  func.return %special : tensor<4xf32>
}
