// RUN: pc-opt %S/../dialect/roundtrip.mlir --pc-print-signatures -o /dev/null | FileCheck %s
// RUN: pc-opt %S/../dialect/roundtrip.mlir --pc-print-signatures=axis-size=4 -o /dev/null | FileCheck %s --check-prefix=FOUR

// The 1-D signatures of every logical op, on the ops of the round-trip test.
// Each line is checked whole: a missing or extra signature fails.

// CHECK: pc.matmul loc({{.*}}:79:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(1)) -> S(2); (S(2), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}:81:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(0)) -> S(2); (S(2), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}:83:{{[0-9]+}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(2), B) -> S(1); (B, S(2)) -> S(2); (S(1), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.add loc({{.*}}:85:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (S(2), S(0)) -> S(2); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.sub loc({{.*}}:87:{{[0-9]+}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(1), S(1)) -> S(1); (S(2), S(2)) -> S(2); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.mul loc({{.*}}:89:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (S(2), S(0)) -> S(2); (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.div loc({{.*}}:91:{{[0-9]+}}): (B, B) -> B; (B, S(0)) -> S(0); (B, S(1)) -> S(1); (S(0), S(2)) -> S(2); (P, B) -> P;{{$}}
// CHECK-NEXT: pc.add loc({{.*}}:93:{{[0-9]+}}): (B, B) -> B; (S(0), S(0)) -> S(0); (P, P) -> P;{{$}}
// CHECK-NEXT: pc.neg loc({{.*}}:95:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2); (P) -> P;{{$}}
// CHECK-NEXT: pc.exp loc({{.*}}:97:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.log loc({{.*}}:99:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.tanh loc({{.*}}:101:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.relu loc({{.*}}:103:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.sigmoid loc({{.*}}:105:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.gelu loc({{.*}}:107:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.gelu loc({{.*}}:109:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.softmax loc({{.*}}:111:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.log_softmax loc({{.*}}:113:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.layer_norm loc({{.*}}:115:{{[0-9]+}}): (B, B, B) -> B; (S(0), B, B) -> S(0); (S(1), B, B) -> S(1);{{$}}
// CHECK-NEXT: pc.broadcast_to loc({{.*}}:117:{{[0-9]+}}): (B) -> B; (S(0)) -> S(1);{{$}}
// CHECK-NEXT: pc.layer_norm loc({{.*}}:118:{{[0-9]+}}): (B, B, B) -> B; (S(0), B, B) -> S(0);{{$}}
// CHECK-NEXT: pc.rms_norm loc({{.*}}:120:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1);{{$}}
// CHECK-NEXT: pc.reduce_sum loc({{.*}}:122:{{[0-9]+}}): (B) -> B; (S(0)) -> P; (S(1)) -> S(0); (S(2)) -> P; (P) -> P;{{$}}
// CHECK-NEXT: pc.reduce_mean loc({{.*}}:124:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> P; (P) -> P;{{$}}
// CHECK-NEXT: pc.reduce_max loc({{.*}}:126:{{[0-9]+}}): (B) -> B; (S(0)) -> P(max); (S(1)) -> P(max); (S(2)) -> P(max); (P(max)) -> P(max);{{$}}
// CHECK-NEXT: pc.reshape loc({{.*}}:128:{{[0-9]+}}): (B) -> B; (P) -> P; (S(0)) -> S(0); (S(2)) -> S(1);{{$}}
// CHECK-NEXT: pc.transpose loc({{.*}}:130:{{[0-9]+}}): (B) -> B; (P) -> P; (S(0)) -> S(0); (S(2)) -> S(1); (S(1)) -> S(2);{{$}}
// CHECK-NEXT: pc.broadcast_to loc({{.*}}:132:{{[0-9]+}}): (B) -> B; (S(0)) -> S(2);{{$}}
// CHECK-NEXT: pc.slice loc({{.*}}:134:{{[0-9]+}}): (B) -> B; (P) -> P; (S(0)) -> S(0);{{$}}
// CHECK-NEXT: pc.concat loc({{.*}}:136:{{[0-9]+}}): (B, B, B) -> B; (S(0), S(0), S(0)) -> S(0); (S(1), S(1), S(1)) -> S(1); (P, P, P) -> P;{{$}}
// CHECK-NEXT: pc.embedding loc({{.*}}:138:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (S(1), B) -> S(1); (B, S(1)) -> S(2); (B, S(0)) -> P;{{$}}
// CHECK-NEXT: pc.causal_mask loc({{.*}}:140:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0);{{$}}
// CHECK-NEXT: pc.cross_entropy loc({{.*}}:142:{{[0-9]+}}): (B, B) -> B; (S(0), S(0)) -> S(0); (S(1), S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}:144:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}:146:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1); (S(2)) -> S(2);{{$}}
// CHECK-NEXT: pc.cast loc({{.*}}:148:{{[0-9]+}}): (B) -> B; (S(0)) -> S(0); (S(1)) -> S(1);{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}:160:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (B, S(0)) -> S(1); (S(2), B) -> S(2); (B, S(2)) -> S(3); (S(3), S(1)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
// CHECK-NEXT: pc.matmul loc({{.*}}:171:{{[0-9]+}}): (B, B) -> B; (S(0), B) -> S(0); (B, S(1)) -> S(1); (S(1), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}

// Splits need an element per device: on 4 devices the size-2 batch of the
// first matmul no longer splits, its size-8 rows still do.
// FOUR: pc.matmul loc({{.*}}:79:{{[0-9]+}}): (B, B) -> B; (S(1), B) -> S(1); (B, S(1)) -> S(2); (S(2), S(0)) -> P; (P, B) -> P; (B, P) -> P;{{$}}
