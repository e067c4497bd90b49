// RUN: pc-opt %S/../../dialect/roundtrip.mlir --pc-print-signatures -o /dev/null | FileCheck %s
// RUN: pc-opt %S/../../dialect/roundtrip.mlir --pc-print-signatures=axis-size=4 -o /dev/null | FileCheck %s --check-prefix=FOUR

// The 1-D signatures of every logical op, on the ops of the round-trip test.
// Each line is checked whole: a missing or extra signature fails.

// CHECK: pc.matmul loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(1)) -> S(2); (S(2), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(0)) -> S(2); (S(2), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(2), B) -> S(1); (B, S(2)) -> S(2); (S(1), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.add loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (S(2), S(0)) -> S(2); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.sub loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(1), S(1)) -> S(1); (S(2), S(2)) -> S(2); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.mul loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (S(2), S(0)) -> S(2); (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.div loc({{.*}}): (B, B) -> B; (B, S(0)) -> S(0); (B, S(1)) -> S(1); (S(0), S(2)) -> S(2); (P, B) -> P;{{$}}
// CHECK-NEXT: pc.add loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> S(0); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.neg loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2); (P) -> P;{{$}}
// CHECK-NEXT: pc.exp loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.log loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.tanh loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.relu loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.sigmoid loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.gelu loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.gelu loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.softmax loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.log_softmax loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.layer_norm loc({{.*}}): (B, B, B) -> B; (S(0), B, B) -> S(0); (S(1), B, B) -> S(1);{{$}}
// CHECK-NEXT: pc.broadcast_to loc({{.*}}): (B) -> B; (S(0)) -> S(1);{{$}}
// CHECK-NEXT: pc.layer_norm loc({{.*}}): (B, B, B) -> B; (S(0), B, B) -> S(0);{{$}}
// CHECK-NEXT: pc.rms_norm loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1);{{$}}
// CHECK-NEXT: pc.reduce_sum loc({{.*}}): (B) -> B; (S(0)) -> P; (S(1)) -> S(0); (S(2)) -> P; (P) -> P;{{$}}
// CHECK-NEXT: pc.reduce_mean loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> P; (P) -> P;{{$}}
// CHECK-NEXT: pc.reduce_max loc({{.*}}): (B) -> B; (S(0)) -> P(max); (S(1)) -> P(max); (S(2)) -> P(max); (P(max)) -> P(max);{{$}}
// CHECK-NEXT: pc.reshape loc({{.*}}): (B) -> B; (P) -> P; (S(0)) -> S(0); (S(2)) -> S(1);{{$}}
// CHECK-NEXT: pc.transpose loc({{.*}}): (B) -> B; (P) -> P; (S(0)) -> S(0); (S(2)) -> S(1); (S(1)) -> S(2);{{$}}
// CHECK-NEXT: pc.broadcast_to loc({{.*}}): (B) -> B; (S(0)) -> S(2);{{$}}
// CHECK-NEXT: pc.slice loc({{.*}}): (B) -> B; (P) -> P; (S(0)) -> S(0);{{$}}
// CHECK-NEXT: pc.concat loc({{.*}}): (B, B, B) -> B; (S(0), S(0), S(0)) -> S(0); (S(1), S(1), S(1)) -> S(1); (P, P, P) -> P;{{$}}
// CHECK-NEXT: pc.embedding loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(1)) -> S(2); (B, S(0)) -> P;{{$}}
// CHECK-NEXT: pc.causal_mask loc({{.*}}): (B) -> B; (S(0)) -> S(0);{{$}}
// CHECK-NEXT: pc.compare loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(1), S(1)) -> S(1); (S(2), S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.sqrt loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.erf loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.cross_entropy loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(1), S(1)) -> S(1); (S(2), B) -> B;{{$}}
// CHECK-NEXT: pc.one_hot loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.embedding_grad loc({{.*}}): (B, B) -> B; (S(0), S(0)) -> P; (S(1), S(1)) -> P; (B, S(2)) -> S(1); (B, P) -> P;{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (B, S(0)) -> S(1); (S(2), B) -> S(2); (B, S(2)) -> S(3); (S(3), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}): (B, B) -> B; (S(0), B) -> S(0); (B, S(1)) -> S(1); (S(1), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}

// Splits need an element per device: on 4 devices the size-2 batch of the
// first matmul no longer splits, its size-8 rows still do.
// FOUR: pc.matmul loc({{.*}}): (B, B) -> B; (S(1), B) -> S(1); (B, S(1)) -> S(2); (S(2), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
