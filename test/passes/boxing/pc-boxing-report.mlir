// RUN: pc-opt %s --pc-boxing-report -o /dev/null | FileCheck %s

// The reported bytes are the formulas of docs/sbp.md. With |T| = 8x8 f32 =
// 256 bytes on p = 4 devices, each device receives
//   all-reduce      2(p-1)/p |T| = 384
//   reduce-scatter   (p-1)/p |T| = 192
//   all-gather       (p-1)/p |T| = 192
//   all-to-all     (p-1)/p^2 |T| =  48
// and the planning cost adds 16500 per collective.

pc.mesh @m <["x"=4]>
pc.mesh @u <["x"=4]>
func.func @f(%p: tensor<8x8xf32, #pc.sbp<@m, [P]>>, %s: tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>,
             %u: tensor<10x2xf32, #pc.sbp<@u, [S(0)]>>) {
  // CHECK: boxing #0 {{.*}} [P] on @m -> [B] on @m
  // CHECK-NEXT: all-reduce(sum) over axes [0]: [P] -> [B]
  // CHECK-NEXT: ranks 0-3: sent 384 B, received 384 B
  // CHECK-NEXT: total: 1 collectives, sent 1536 B, received 1536 B, planning cost 16884
  %0 = pc.boxing %p : (tensor<8x8xf32, #pc.sbp<@m, [P]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  // CHECK: boxing #1 {{.*}} [P] on @m -> [S(0)] on @m
  // CHECK-NEXT: reduce-scatter(sum, dim 0) over axes [0]
  // CHECK-NEXT: ranks 0-3: sent 192 B, received 192 B
  // CHECK-NEXT: planning cost 16692
  %1 = pc.boxing %p : (tensor<8x8xf32, #pc.sbp<@m, [P]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>
  // CHECK: boxing #2 {{.*}} [S(0)] on @m -> [B] on @m
  // CHECK-NEXT: all-gather(dim 0) over axes [0]
  // CHECK-NEXT: ranks 0-3: sent 192 B, received 192 B
  %2 = pc.boxing %s : (tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  // CHECK: boxing #3 {{.*}} [S(0)] on @m -> [S(1)] on @m
  // CHECK-NEXT: all-to-all(dim 0 -> dim 1) over axes [0]
  // CHECK-NEXT: ranks 0-3: sent 48 B, received 48 B
  // CHECK-NEXT: planning cost 16548
  %3 = pc.boxing %s : (tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  // Uneven: 10 rows as 3, 3, 2, 2. On the ring a rank receives the rows it
  // lacks, and forwards all rows but its successor's.
  // CHECK: boxing #4 {{.*}} [S(0)] on @u -> [B] on @u
  // CHECK-NEXT: all-gather(dim 0) over axes [0]
  // CHECK-NEXT: ranks 0: sent 56 B, received 56 B
  // CHECK-NEXT: ranks 1: sent 64 B, received 56 B
  // CHECK-NEXT: ranks 2: sent 64 B, received 64 B
  // CHECK-NEXT: ranks 3: sent 56 B, received 64 B
  %4 = pc.boxing %u : (tensor<10x2xf32, #pc.sbp<@u, [S(0)]>>) -> tensor<10x2xf32, #pc.sbp<@u, [B]>>
  return
}
// CHECK: boxing total: 5 boxings, 5 collectives
