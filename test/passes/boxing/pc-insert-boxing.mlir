// RUN: pc-opt %s --pc-insert-boxing | FileCheck %s

pc.mesh @m <["x"=2]>

// Two consumers that want one layout share one boxing; a third with another
// layout gets its own. The attribute is consumed.
// CHECK-LABEL: func.func @shared
// CHECK: %[[B:.*]] = pc.boxing %arg0 : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
// CHECK-NEXT: %[[S:.*]] = pc.boxing %arg0 : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
// CHECK-NEXT: pc.exp %[[B]]
// CHECK-NEXT: pc.tanh %[[B]]
// CHECK-NEXT: pc.relu %[[S]]
// CHECK-NOT: pc.operand_sbps
func.func @shared(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) {
  %0 = pc.exp %x {pc.operand_sbps = [#pc.sbp<@m, [B]>]} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.tanh %x {pc.operand_sbps = [#pc.sbp<@m, [B]>]} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %2 = pc.relu %x {pc.operand_sbps = [#pc.sbp<@m, [S(0)]>]} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return
}

// A constraint becomes a boxing, or nothing when it is met already.
// CHECK-LABEL: func.func @constraints
// CHECK-NEXT: %[[X:.*]] = pc.boxing %arg0 : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
// CHECK-NEXT: return %[[X]], %arg0
func.func @constraints(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> (tensor<8xf32, #pc.sbp<@m, [B]>>, tensor<8xf32, #pc.sbp<@m, [S(0)]>>) {
  %0 = pc.to_sbp %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.to_sbp %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return %0, %1 : tensor<8xf32, #pc.sbp<@m, [B]>>, tensor<8xf32, #pc.sbp<@m, [S(0)]>>
}
