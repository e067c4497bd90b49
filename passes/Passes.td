//===- Passes.td - pc compiler passes ----------------------*- tablegen -*-===//
//
// The passes take a logical graph to per-device programs, in this order
// (--pc-distribute runs them all):
//
//   pc-sbp-propagate -> pc-insert-boxing -> pc-optimize-boxing
//     -> pc-lower-boxing -> pc-partition
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_TD
#define PC_PASSES_TD

include "mlir/Pass/PassBase.td"

def PipelineSplit : Pass<"pc-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "Cuts a logical graph into pipeline stages, each on its mesh";
  let description = [{
    Runs first, on the forward graph. Every op gets its model stage
    (`pc.stage`): the user's, where written (ops without one take the latest
    stage of their operands, parameter reads that of their first user), or,
    with `stages=N` and none written, from a cut into `N x virtual-stages`
    parts of equal weight, an op weighing its share of the graph's flops
    plus its share of the parameter and activation bytes. A stage may use
    values of its own and earlier stages only.

    Model stage `c` runs on device stage `c mod N`, whose mesh is listed in
    the graph's `pc.stage_meshes`, or else is a copy of the module's only
    mesh on the next ranks (`@m_stage0` on ranks 0..n-1, `@m_stage1` on
    n..2n-1, ...): layouts written on that mesh move to the stage's copy,
    so stage 0's `[S(0), B]` and stage 1's `[B, S(1)]` keep their SBP. The
    graph gets `pc.pipeline` (schedule, stages, micro-batches, virtual
    stages), which `pc-micro-batch` and `pc-pipeline-schedule` read.

    ```mlir
    // input (stages=2)
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = pc.matmul %x, %w1 ...
      %1 = pc.matmul %0, %w2 ...
    // output
    pc.mesh @m_stage0 <["dp"=2]> on cpu ranks [0, 1]
    pc.mesh @m_stage1 <["dp"=2]> on cpu ranks [2, 3]
    func.func @f(...) attributes {pc.pipeline = #pc.pipeline<...>,
                                  pc.stage_meshes = [@m_stage0, @m_stage1]} {
      %0 = pc.matmul %x, %w1 {pc.stage = 0 : i64} ...
      %1 = pc.matmul %0, %w2 {pc.stage = 1 : i64} ...
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "0",
           "Device stages (0: as many as the pc.stage attributes say)">,
    Option<"virtualStages", "virtual-stages", "int64_t", "1",
           "Model stages per device stage (interleaved schedule)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches per step">,
    Option<"schedule", "schedule", "std::string", "",
           "gpipe, 1f1b, interleaved or zb-h1 (default: 1f1b, or interleaved "
           "with virtual stages)">,
    Option<"report", "report", "bool", "false",
           "Print each stage's ops, flops and parameter bytes">,
    Option<"replicateParams", "replicate-params", "bool", "true",
           "Store each parameter without a layout replicated on its stage's "
           "mesh (false: leave it to pc-auto-parallel, which places it on "
           "the mesh of its first read)">,
  ];
  let statistics = [
    Statistic<"numGraphs", "graphs", "Graphs cut into stages">,
  ];
}

def MicroBatch : Pass<"pc-micro-batch", "::mlir::ModuleOp"> {
  let summary = "Runs a graph as micro-batches, accumulating gradients";
  let description = [{
    For a graph with `pc.pipeline` (from `pc-pipeline-split`) of `m > 1`
    micro-batches, or with a pipeline of several stages. With
    `phase=shrink`, before `pc-autodiff`: the forward graph is rewritten to
    compute one micro-batch (every input of rank >= 1 is a batch along dim
    0, which the pass follows through the graph; dims that carry it shrink
    by `m`). With `phase=unroll`, after it: the graph takes the whole batch
    again, and runs the micro-batch's forward and backward once per
    micro-batch `k` on rows `k, k + m, k + 2m, ...` of every input (a
    data-parallel split along dim 0 then needs no communication).

    Each op of micro-batch `k` gets its action `pc.action = #pc.action<F|B|W,
    stage, k>`: forward ops F; backward ops B, or, under `zb-h1`, B when
    they lead to an activation's gradient and W when they only lead to
    parameters' gradients. Gradients accumulate as a sum in micro-batch
    order, then scale by `1/m` when the loss averages over the batch (by 1
    when it sums), so the step's gradient is the whole batch's; the loss is
    combined the same way, other batched results are put back in batch
    order, and other results are averaged.
  }];
  let options = [
    Option<"phase", "phase", "std::string", "\"unroll\"",
           "shrink (before pc-autodiff) or unroll (after it)">,
  ];
  let statistics = [
    Statistic<"numUnrolled", "unrolled", "Graphs run as micro-batches">,
  ];
}

def PipelineSchedule : Pass<"pc-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "Gives each per-device program its schedule, and checks them";
  let description = [{
    Runs after `pc-partition`. Every op of a pipelined program gets an
    action (a boxing step takes that of its first consumer in the schedule,
    a send that of the value it sends), each program gets its device
    stage's list of actions in order (`pc.schedule`, unless written), and
    the lists of all programs of a graph are checked together: every action
    once, F before B before W, programs of one device stage in one order,
    and no cycle of waits across stages (a violation names both ranks and
    the actions). With `report`, prints the predicted bubble and in-flight
    micro-batches.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Print each graph's schedule, bubble and in-flight activations">,
  ];
  let statistics = [
    Statistic<"numScheduled", "scheduled", "Programs given a schedule">,
  ];
}

def MemoryPlan : Pass<"pc-memory-plan", "::mlir::ModuleOp"> {
  let summary = "Predicts each per-device program's peak memory, against a budget";
  let description = [{
    Runs last, on per-device programs. Replays each program's allocations in
    the order the runtime runs it (program order, or a pipelined program's
    schedule) the way the executor makes and drops tensors: stored
    parameter and optimizer-state pieces live throughout, and the value of
    a `pc.set_param` beside them from the moment it is made (a step is a
    transaction: the old pieces stay until the run succeeds; with
    `in-place-updates`, as the session then runs it, a piece that is
    stored over goes after its last reader), inputs until their last use, constants throughout, every other result from its op to its last
    use, except views (a reshape; a collective over axes of one member).
    Each program gets `pc.memory`: the predicted peak and what is live at
    it, as parameters, gradients, optimizer state, activations (the
    forward pass's values and the inputs) and workspace (the optimizer's
    temporaries, constants); and `activations_peak`, the most activation
    bytes live at any point.

    With `device-memory` (bytes per device), a program whose peak exceeds
    it is an error that names its ranks and the breakdown, before anything
    runs.

    ```mlir
    // output
    func.func @mlp.part0(...) attributes {pc.graph = "mlp", pc.memory = {
        activations = 8704 : i64, activations_peak = 8704 : i64,
        gradients = 4224 : i64,
        optimizer_state = 8448 : i64, parameters = 4224 : i64,
        peak = 25600 : i64, workspace = 0 : i64}, pc.ranks = array<i64: 0>}
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"deviceMemory", "device-memory", "int64_t", "0",
           "Bytes of memory per device; a program that needs more is an "
           "error (0: no limit)">,
    Option<"report", "report", "bool", "false",
           "Print each program's predicted peak and its breakdown">,
    Option<"inPlaceUpdates", "in-place-updates", "bool", "false",
           "The session updates parameters in place (no step transaction): "
           "a piece that is stored over goes after its last reader">,
  ];
  let statistics = [
    Statistic<"numPrograms", "programs", "Programs given a memory plan">,
  ];
}

def Lora : Pass<"pc-lora", "::mlir::ModuleOp"> {
  let summary = "Adds low-rank adapters to matching weights and freezes them";
  let description = [{
    Low-rank adaptation (Hu et al. 2021), before `pc-autodiff`. Every
    matmul in a logical graph whose weight (its right operand, a 2-D
    `pc.get_param`) has a name matching the regular expression `targets`
    gets a rank-`rank` path beside it:

      y = x·W  becomes  y = x·W + (alpha / rank)·(x·A)·B

    with new parameters `<W>.lora_a` (`[in, rank]`, uniform in
    `±1/sqrt(in)`) and `<W>.lora_b` (`[rank, out]`, zeros, so the adapted
    model starts equal to the base). Every other parameter is frozen
    (`trainable = false`): autodiff then differentiates the adapters only,
    and the optimizer keeps state for them only. A tensor-parallel weight's
    adapter splits with it: A takes the weight's split of its input dim, B
    of its output dim. A weight is adapted only when every read of it is
    the right operand of a plain matmul (not transposed, no addend): a
    weight also read otherwise (tied embeddings, `transpose_rhs`) is left
    alone, and frozen. Matching no weight is an error.

    ```mlir
    // input (targets = "attn\.q$")
    %w = pc.get_param @h0.attn.q : tensor<64x64xf32>
    %y = pc.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    // output
    pc.param @h0.attn.q : tensor<64x64xf32> = ... {trainable = false}
    pc.param @h0.attn.q.lora_a : tensor<64x8xf32> = #pc.init<uniform(...)>
    pc.param @h0.attn.q.lora_b : tensor<8x64xf32> = #pc.init<zeros>
    %y0 = pc.matmul %x, %w ...
    %a = pc.matmul %x, %la ...
    %ab = pc.matmul %a, %lb {alpha = 2.0 : f64} ...
    %y = pc.add %y0, %ab ...
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"rank", "rank", "int64_t", "8", "The adapters' rank r">,
    Option<"alpha", "alpha", "double", "16.0",
           "The adapters' scale is alpha / rank">,
    Option<"targets", "targets", "std::string", "\"attn\\\\.(q|v)$\"",
           "Regular expression over weight names: the weights to adapt "
           "(default: attention queries and values, as in the paper)">,
  ];
  let statistics = [
    Statistic<"numAdapted", "adapted", "Weights given adapters">,
    Statistic<"numSites", "sites", "Matmuls given an adapter path">,
  ];
}

def Offload : Pass<"pc-offload", "::mlir::ModuleOp"> {
  let summary = "Keeps optimizer state, and its step, in host memory";
  let description = [{
    CPU offload (ZeRO-Offload, Ren et al. 2021), after boxing is lowered
    and before `pc-partition`. With `optimizer`, every optimizer state
    parameter is stored in host memory (`pc.host` on the `pc.param`) and
    the optimizer's ops (those that read optimizer state or the learning
    rate, and what they compute) run on the host (`pc.host` on the op):
    the device holds no optimizer state, and spends no time on the
    update. With `parameters` (for ZeRO-3, whose weights are stored as
    shards), the trained weights are stored on the host too, each copied
    to the device right before its gather.

    A `pc.copy` goes wherever a value crosses: a gradient (already reduced
    to its shard under ZeRO) to the host before the update, a new weight to
    the device before its gather or its store. Views (`pc.after`,
    `pc.reshape`) stay where their input is, so a gated weight read is
    copied only when its gate opens. Each value is copied once.

    ```mlir
    // output (optimizer=true)
    pc.param @w.adam_m : tensor<64x64xf32, ...> = #pc.init<zeros> {pc.host, ...}
    %g_h = pc.copy %g {pc.host} ...
    %m = pc.get_param @w.adam_m {pc.host} ...
    %w2, %m2, %v2 = pc.adam_update %w_h, %g_h, %m, ... {pc.host} ...
    %w2_d = pc.copy %w2 ...
    pc.set_param @w, %w2_d ...
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"optimizer", "optimizer", "bool", "true",
           "Optimizer state and the step in host memory">,
    Option<"parameters", "parameters", "bool", "false",
           "Trained weights in host memory too (with ZeRO-3)">,
  ];
  let statistics = [
    Statistic<"numHostParams", "host-params", "Parameters stored on the host">,
    Statistic<"numHostOps", "host-ops", "Ops run on the host">,
    Statistic<"numCopies", "copies", "Copies between host and device">,
  ];
}

def MixedPrecision : Pass<"pc-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Runs the forward pass in bf16 or f16 over f32 master weights";
  let description = [{
    Automatic mixed precision as a rewrite of the logical graphs, before
    `pc-autodiff`. Parameters stay f32 (the master weights the optimizer
    updates); every op computes in `dtype` on operands cast to it, except
    the ops named in `f32-ops` (by default softmax, log-softmax, the norms,
    the cross-entropy and the sums and means), which take and give f32. Ops that only move
    data (reshape, transpose, slices, layouts) keep their operand's type,
    and the graph's results are cast back to their declared types. Each
    value is cast once per type it is needed in. Autodiff then makes the
    backward pass in the same types (the gradient of a cast is the cast
    back), so each weight's gradient arrives in f32. The CPU kernels
    widen 16-bit operands and accumulate in f32 (matmuls and reductions
    included) and round each result once.

    Loss scaling, for f16's narrow range: `loss-scale=dynamic` adds the
    parameters `loss_scale` (starting at `init-scale`) and
    `loss_scale.clean_steps`, and marks the graph `pc.loss_scaling`.
    `pc-autodiff` then starts the backward pass from the scale instead of
    1, and `pc-optimizer` divides the gradients by it, skips a step whose
    gradients hold an inf or a NaN (every parameter and every state keep
    their values), halves the scale after such a step and doubles it after
    `growth-interval` clean ones. A number is a static scale (still
    skipping steps that overflow); `none` turns scaling off. The default
    is `dynamic` for f16 and `none` for bf16, whose range is f32's.
    `inject-overflow` adds the input `loss_scale.inject`, which multiplies
    the backward seed: a test feeds it an infinity to force an overflow.

    ```mlir
    // input
    %w = pc.get_param @w : tensor<64x64xf32>
    %y = pc.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %p = pc.softmax %y {axis = -1 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    // output (dtype=bf16)
    %xh = pc.cast %x : (tensor<8x64xf32>) -> tensor<8x64xbf16>
    %wh = pc.cast %w : (tensor<64x64xf32>) -> tensor<64x64xbf16>
    %y = pc.matmul %xh, %wh : (...) -> tensor<8x64xbf16>
    %yf = pc.cast %y : (tensor<8x64xbf16>) -> tensor<8x64xf32>
    %p = pc.softmax %yf {axis = -1 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"bf16\"",
           "The compute type: bf16 or f16">,
    ListOption<"f32Ops", "f32-ops", "std::string",
               "Ops kept in f32, by name without the pc. prefix (default: "
               "softmax, log_softmax, layer_norm, rms_norm, cross_entropy, "
               "reduce_sum, reduce_mean; none: no op)">,
    Option<"lossScale", "loss-scale", "std::string", "\"\"",
           "dynamic, none, or a static scale (default: dynamic for f16, "
           "none for bf16)">,
    Option<"initScale", "init-scale", "double", "65536.0",
           "The dynamic scale's first value">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "Clean steps after which the dynamic scale grows">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "What the dynamic scale grows by">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "What the scale is multiplied by after an overflow">,
    Option<"injectOverflow", "inject-overflow", "bool", "false",
           "Add the input loss_scale.inject (for tests)">,
  ];
  let statistics = [
    Statistic<"numCasts", "casts", "Casts added">,
    Statistic<"numLow", "low-precision-ops", "Ops computing in dtype">,
    Statistic<"numF32", "f32-ops", "Ops kept in f32">,
  ];
}

def Recompute : Pass<"pc-recompute", "::mlir::ModuleOp"> {
  let summary = "Recomputes forward values in the backward pass instead of keeping them";
  let description = [{
    Runs after `pc-autodiff`, on logical graphs with a backward pass.
    Activation checkpointing as a rewrite: the forward ops of a segment keep
    their results for the forward pass only, and the backward pass reads
    copies of them, recomputed from the values the segment starts from
    (its checkpoints, which stay). Each copy reads its inputs through
    `pc.after` the first gradient that reaches the segment, so the
    recomputation runs when the backward pass gets there. The forward
    values are freed after their last forward use, and the copies after
    their last backward use. The copies are the same ops on the same
    values: results are bit for bit those without recompute.

    `mode=full` recomputes whole layers. A layer is a run of forward ops
    with one key: the segment users give with `pc.segment = N`, or else the
    layer in the names of the parameters an op reads, up to the first part
    with a digit (`h0.attn.q` is in `h0`, `layers.3.mlp.fc` in
    `layers.3`); an op without one takes its predecessor's, and a
    parameter without a layer (`wte`, `lnf.weight`) starts a run of its
    own. The run holding the loss is not recomputed: its backward pass
    starts as soon as it ends.

    `mode=selective` recomputes only attention cores (Korthikanti et al.,
    2022): each `pc.softmax` whose result feeds a `pc.matmul`, with the ops
    between it and the `pc.matmul` that made its scores. Those are the
    values whose size grows with the square of the sequence, and the
    cheapest to make again.

    ```mlir
    // input (after pc-autodiff; %p is read by the backward pass)
    %s = pc.matmul %q, %k {transpose_rhs} ...
    %p = pc.softmax %s {axis = -1 : i64} ...
    ...
    %dv = pc.matmul %p, %dy {transpose_lhs} ...
    // output (mode=selective)
    %q1 = pc.after %q, %dy {pc.recompute} ...
    %k1 = pc.after %k, %dy {pc.recompute} ...
    %s1 = pc.matmul %q1, %k1 {pc.recompute, transpose_rhs} ...
    %p1 = pc.softmax %s1 {axis = -1 : i64, pc.recompute} ...
    %dv = pc.matmul %p1, %dy {transpose_lhs} ...
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"full\"",
           "full (whole layers) or selective (attention cores)">,
  ];
  let statistics = [
    Statistic<"numSegments", "segments", "Segments recomputed">,
    Statistic<"numRecomputed", "recomputed-ops", "Forward ops recomputed">,
  ];
}

def Autodiff : Pass<"pc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the backward pass of a logical graph with a loss";
  let description = [{
    Differentiates each logical graph that has a loss, in reverse mode, and
    returns the gradient of every trainable parameter that reaches the loss.
    The loss is the result marked `{pc.loss}`, or the only result when it is
    a 0-d float tensor. It runs before SBP propagation, so that propagation
    and boxing see forward and backward together: the gradient of a
    broadcast weight comes out partial, and its consumer decides where to
    reduce it.

    Only values that depend on a trainable parameter get gradients, and only
    where the loss depends on them: frozen parameters (`trainable = false`),
    inputs and integer values cost nothing backward. A parameter read by
    several `pc.get_param`s gets the sum. Each gradient is a new result,
    after the existing ones, in the order of the parameters' first reads,
    marked `{pc.grad = @param, pc.name = "param.grad"}`. Every op has a rule
    built from logical ops (the gradient of a matmul is two matmuls, of a
    cross-entropy softmax minus `pc.one_hot`, of an embedding
    `pc.embedding_grad`); an op without one is an error.

    ```mlir
    // input
    func.func @f(%x: tensor<8x4xf32>) -> (tensor<f32> {pc.loss}) {
      %w = pc.get_param @w : tensor<4x2xf32>
      %y = pc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
      %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<8x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    // output: the same, returning also
    //   (tensor<4x2xf32> {pc.grad = @w, pc.name = "w.grad"})
    // computed as pc.matmul %x, %dy {transpose_lhs}
    ```
  }];
  let options = [
    Option<"graph", "graph", "std::string", "",
           "The graph to differentiate (default: every graph with a loss)">,
  ];
  let statistics = [
    Statistic<"numGradients", "gradients", "Parameter gradients returned">,
    Statistic<"numRules", "rules", "Ops differentiated">,
  ];
}

def Optimizer : Pass<"pc-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turns gradients into parameter updates in the graph";
  let description = [{
    Runs after `--pc-autodiff`, before propagation. For each graph that
    returns gradients (`{pc.grad = @w}`), it adds the update of every
    trained parameter: SGD (with momentum and weight decay), Adam (weight
    decay as L2 through the gradient) or AdamW (decoupled weight decay),
    optionally after clipping all gradients by their global norm. Optimizer
    state is frozen parameters named after the weight (`@w.momentum`,
    `@w.adam_m`, `@w.adam_v`) with the weight's shape and layout in f32
    (the update math is f32 too; a 16-bit weight is rounded once), plus one
    step counter `@optimizer.step` for Adam's bias correction; every new
    value is stored with `pc.set_param`. The learning rate is a new last
    argument `%lr: tensor<f32> {pc.name = "lr"}`, which the training loop
    feeds from its schedule. The gradient results are consumed; with
    clipping the global norm is returned instead (`{pc.name = "grad_norm"}`).

    A graph marked `pc.loss_scaling` (`pc-mixed-precision`) has gradients
    scaled by the parameter it names: they are divided by it before
    clipping; every value the step stores goes through a `pc.select` that
    keeps the old one when any gradient holds an inf or a NaN (the step,
    its state and its step count are skipped); under dynamic scaling the
    scale is multiplied by `backoff` after such a step and by `growth`
    after `interval` clean ones. The graph then also returns the scale the
    step used (`loss_scale`) and 1 for a skipped step (`skipped`).

    With `zero=1` or `zero=2` (ZeRO, Rajbhandari et al. 2020), the update of
    a weight replicated over the `zero-axis` mesh axis runs on a shard: the
    state is stored split over that axis (along the first dim it divides),
    the weight is sliced to it (no communication), and the new weight is
    all-gathered back to its layout before it is stored. Stage 1 takes the
    gradient in the weight's layout first (an all-reduce) and slices it;
    stage 2 converts the partial gradient straight to the shard (a
    reduce-scatter), the same bytes as the all-reduce it replaces. With
    `zero=3` the weight itself is stored in the shard: every read of it (in
    the training step and in the module's other logical graphs) is
    gathered back to the weight's layout right before its reader, through
    `pc.after` the reader's other computed operand, so forward and backward
    each gather their own copy and drop it after use; the new weight is
    stored in the shard, ungathered. A weight that is not replicated over
    the axis, or has no dim the axis divides, keeps the plain update.

    A trained parameter without a declared layout is stored replicated on
    the module's only mesh, so that its reads, its update and the next step
    agree on one layout; for tensor parallelism or ZeRO, declare it.

    ```mlir
    // after --pc-autodiff: ... -> (tensor<f32> {pc.loss},
    //                              tensor<4x3xf32> {pc.grad = @w, ...})
    // after --pc-optimizer="kind=sgd":
    //   func.func @f(%x: ..., %lr: tensor<f32> {pc.name = "lr"})
    //       -> (tensor<f32> {pc.loss})
    //   %w = pc.get_param @w : ...
    //   %step = pc.mul %lr, %dw : ...
    //   %next = pc.sub %w, %step : ...
    //   pc.set_param @w, %next : ...
    ```
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"adamw\"",
           "sgd, adam or adamw">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd and adam, decoupled for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's second-moment decay">,
    Option<"eps", "eps", "double", "1e-8", "Adam's epsilon">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "Clip gradients to this global norm (0: no clipping)">,
    Option<"fuse", "fuse", "bool", "true",
           "Adam's and AdamW's update of a weight and its moments as one "
           "pc.adam_update (false: the elementwise ops it equals)">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 1 shards the optimizer state over the data-parallel "
           "axis, 2 also reduce-scatters the gradients into that shard, 3 "
           "also stores the weights there and gathers them at each use (0: "
           "none)">,
    Option<"zeroAxis", "zero-axis", "std::string", "\"dp\"",
           "The mesh axis ZeRO shards over">,
    Option<"stateBits", "state-bits", "int64_t", "32",
           "Bits per element of Adam's moments: 32, or 8 (block-wise "
           "quantized, pc.adam8_update, for tensors of 4096 elements or "
           "more)">,
  ];
  let statistics = [
    Statistic<"numUpdated", "updated", "Parameters given an update">,
    Statistic<"numSharded", "sharded", "Updates sharded by ZeRO">,
    Statistic<"numGathered", "gathered",
              "Parameter reads gathered at their use (ZeRO-3)">,
    Statistic<"numFused", "fused", "Updates emitted as one pc.adam_update">,
    Statistic<"numQuantized", "quantized",
              "Updates with 8-bit moments (pc.adam8_update)">,
    Statistic<"numStates", "states", "Optimizer state parameters added">,
    Statistic<"numSkippable", "skippable",
              "Stored values kept only by a finite step (loss scaling)">,
  ];
}

def Fuse : Pass<"pc-fuse", "::mlir::ModuleOp"> {
  let summary = "Folds elementwise work into the ops next to it";
  let description = [{
    Runs on logical graphs after `--pc-autodiff` and `--pc-optimizer`,
    before propagation, so that the fused ops get their layouts like any
    other. Today it folds a product by a scalar constant into the matmul
    it scales, as `alpha`:
     - `mul(matmul(a, b), c)` (the matmul's only use), which scales as the
       product is written out: the same bits as the two ops;
     - `matmul(mul(x, c), w)` when every use of the product is a matmul
       (an attention's backward scales dS once for two matmuls), which
       reassociates: within the tolerances of docs/training.md (Tolerances).
    Each fold saves a pass over the tensor (2M elements per layer in the
    bench GPT's attention). `c` must be a rank-0 `pc.constant` of a float
    type, and the product must not broadcast.

    It also drops the gradient of an attention's causal mask,
    `pc.causal_mask {zero}` of a `pc.softmax_grad` whose softmax (over the
    last dim) reads `pc.causal_mask` scores: the softmax's output is 0 above
    the diagonal, so its gradient is already (a signed) 0 there.

    And it folds a causal mask into the softmax that reads it:
    `pc.softmax(pc.causal_mask(x))` over the last dim becomes
    `pc.softmax(x) {causal}`, which never writes the masked scores nor
    exponentiates them (within f32 rounding of the two ops: the sums run
    in another order), and that softmax's gradients (`pc.softmax_grad` of
    its output) become causal too, reading only the diagonal and below
    (the same bits as the full gradient of that output).

    Last, a sum with a product folds into the matmul as its addend:
    `pc.add(pc.matmul(a, b), c)` becomes `pc.matmul(a, b, c)` when the
    matmul has no other use and no addend yet, and `c` does not widen the
    result (a residual, a bias, or another product: the gradient of a
    value read by several matmuls folds into a chain of them). The sum is
    made as the product is written out, the same bits as the two ops, and
    saves two passes over the result.

    ```mlir
    // before: %s = pc.matmul %q, %k {transpose_rhs} : ...
    //         %ss = pc.mul %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> ...
    // after:  %ss = pc.matmul %q, %k {alpha = 0.125 : f64, transpose_rhs} : ...
    // before: %p = pc.matmul %x, %w : ...
    //         %h = pc.add %r, %p : ...
    // after:  %h = pc.matmul %x, %w, %r : ...
    ```
  }];
  let options = [
    Option<"scale", "scale", "bool", "true",
           "Fold products by scalar constants into matmuls">,
    Option<"mask", "mask", "bool", "true",
           "Drop causal-mask gradients that repeat a softmax gradient's "
           "zeros">,
    Option<"causal", "causal", "bool", "true",
           "Fold causal masks into the softmaxes that read them, and make "
           "their gradients causal">,
    Option<"addend", "addend", "bool", "true",
           "Fold sums with a product into the matmul, as its addend">,
  ];
  let statistics = [
    Statistic<"numScaled", "scaled",
              "Products by a scalar folded into a matmul's alpha">,
    Statistic<"numMasks", "masks", "Causal-mask gradients dropped">,
    Statistic<"numCausal", "causal", "Causal masks folded into softmaxes">,
    Statistic<"numAddends", "addends", "Sums folded into a matmul's addend">,
  ];
}

def Simulate : Pass<"pc-simulate", "::mlir::ModuleOp"> {
  let summary = "Predicts each per-device program's step time over the cost model";
  let description = [{
    Runs on per-device programs (after `pc-partition`) and predicts one
    step, the way the actor runtime runs them, all programs together: each
    program's ops in the order it fires them (a pipeline program's by its
    `pc.schedule`), compute ops on a compute stream, collectives and the
    local boxing steps on a communication stream, each op starting when its
    stream is free and its operands are ready, so communication overlaps
    the compute that does not wait for it; a receive completes no earlier
    than its matching send, so a pipeline stage waits for the one before
    it. Where the host's cores are fewer than its devices' threads
    (`concurrent_devices` in the cost model), the busy devices share them
    (processor sharing). A compute op takes its measured time when
    `op-profile` gives one (vTrain's method: each kernel timed alone on
    this machine), else its roofline time (its per-device FLOPs against
    the peak, its bytes against the memory bandwidth) plus the kernel
    latency; a collective the alpha-beta time of a ring over its group on
    the link (planner/CostModel.h); rates from the module's
    `pc.cost_model` (`pc-cost-model`), else this machine's CPU devices.
    Prints, per program: its ranks, FLOPs, compute and communication
    seconds, bytes moved per device and when it ends; then the predicted
    step (the last end). `pc-run --simulate` prints the same for the
    programs it runs.

    ```
    pc-simulate: @mlp.part0 ranks 0-3: 1.1 GFLOP, compute 10.2 ms,
        comm 1.3 ms (2 collectives, 1.0 MiB per device); ends at 10.9 ms
    pc-simulate: predicted step 10.9 ms
    ```
  }];
  let statistics = [
    Statistic<"numPrograms", "programs", "Per-device programs simulated">,
  ];
  let options = [
    Option<"opProfile", "op-profile", "std::string", /*default=*/"\"\"",
           "Measured op times (JSON, pc-run --profile-ops --op-profile): an "
           "op it times takes that time instead of its roofline">,
  ];
}

def CostModel : Pass<"pc-cost-model", "::mlir::ModuleOp"> {
  let summary = "Sets the devices' rates every cost is figured with";
  let description = [{
    Reads a cluster spec (docs/planning.md) and records its device's rates
    on the module as `pc.cost_model`: peak FLOP/s and memory bandwidth (each
    times its efficiency), and the link between a mesh's devices (the
    intra-node link, or the network for one device per node) with its
    latency. Every cost after it uses these: `pc-auto-parallel`'s,
    `pc-sbp-propagate`'s and the boxing passes' planner (a collective's
    fixed cost is the bytes the link moves in its latency), `pc-partition`'s
    and the runtime's transfer plans, and `pc-boxing-report`. Without it
    they all use the same defaults (a collective costs 16.5 kB, OneFlow's
    figure).

    ```mlir
    // --pc-cost-model=cluster=planner/clusters/dgx-a100.json
    module attributes {pc.cost_model = {kernel_latency = 4.0e-06 : f64,
        link_bandwidth = 2.4e+11 : f64,
        link_latency = 3.0e-06 : f64, memory_bandwidth = 1.73e+12 : f64,
        peak_flops = 1.365e+13 : f64}} { ... }   // f32: 19.5 TF/s x 0.70
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"\"",
           "Cluster spec (JSON) to read">,
    Option<"dtype", "dtype", "std::string", "\"f32\"",
           "The dtype whose peak FLOP/s counts">,
  ];
}

def AutoParallel : Pass<"pc-auto-parallel", "::mlir::ModuleOp"> {
  let summary = "Chooses the SBP of every value for the least predicted step time";
  let description = [{
    Given only the mesh, chooses the layout of every value (op results,
    parameters and their optimizer state, inputs, constants) to minimize
    the predicted step time under each device's memory budget, and writes
    the choices as annotations, which `pc-sbp-propagate` then follows.
    What the IR already annotates is a constraint: an annotated value keeps
    its layout, an annotated op result restricts its op to the signatures
    that produce it.

    Each op is a node whose states are its nd SBP signatures; parameters,
    inputs and constants are nodes whose states are their stored layouts.
    A state costs the op's time by roofline (its FLOPs and bytes per
    device against the cluster's peak and memory bandwidth); an edge costs
    the boxing between the producer's layout and the consumer's by the
    boxing planner, in seconds on the cluster's links.

    A plan's memory is a replay of each graph in the runtime's order, as
    `pc-memory-plan` replays the programs that come of it: parameters and
    Adam's two moments throughout, inputs to their last read, every result
    from its op to its last reader, a value converted to another layout
    from its first reader in that layout to its last, and each gradient's
    update making the new weight and moments beside the old (a step is a
    transaction). The solver prices each state's bytes where they count
    most (the backward's start, or the step's end).

    It runs on the training graph after `pc-autodiff` and before
    `pc-optimizer` (which keeps each weight's state in the weight's
    layout): each gradient is an edge to its weight's layout, so the cost
    of reducing it (the data-parallel all-reduce) is in the plan. Under a
    `device-memory` budget, memory is priced (a Lagrange multiplier found by
    bisection) until the replay fits.

    The solver (planner/CostGraph.h) eliminates chains and leaves exactly,
    then solves what is left exhaustively when it is small, else by local
    search; the report says which.

    A pipelined graph (after `pc-pipeline-split` with
    `replicate-params=false`) is planned whole: each op on its stage's
    mesh, each parameter on the mesh of its first read, values that cross
    stages priced by the boxing planner's transfer between meshes, and the
    memory budget held by every stage's devices.

    ```mlir
    // input: only the mesh
    pc.mesh @m <["dp"=2, "tp"=2]>
    %y = pc.matmul %x, %w : (tensor<64x512xf32>, tensor<512x512xf32>) -> tensor<64x512xf32>
    // output: every value annotated, e.g.
    %y = pc.matmul %x, %w : (...) -> tensor<64x512xf32, #pc.sbp<@m, [S(0), S(1)]>>
    ```
  }];
  let dependentDialects = ["::pc::PcDialect"];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"\"",
           "Cluster spec (JSON, docs/planning.md) giving the devices' peak, "
           "memory bandwidth and links (default: this machine's CPU virtual "
           "devices)">,
    Option<"deviceMemory", "device-memory", "int64_t", "0",
           "Bytes of memory per device the plan must fit (0: no limit)">,
    Option<"report", "report", "bool", "false",
           "Print the search's size, whether it was exact, and the "
           "predicted time and memory">,
    Option<"checkExact", "check-exact", "bool", "false",
           "Also solve by brute force (graphs of up to 10^7 combinations) "
           "and fail when the plan costs more: a test of the solver">,
    Option<"optimizerStates", "optimizer-states", "int64_t", "2",
           "Tensors of optimizer state per trained weight, as pc-optimizer "
           "will add them (Adam: 2; SGD with momentum: 1; SGD: 0)">,
    Option<"stateBits", "state-bits", "int64_t", "32",
           "Bits per element of the optimizer state (32, or 8 for "
           "pc-optimizer's state-bits=8)">,
    Option<"zero", "zero", "int64_t", "0",
           "The ZeRO stage pc-optimizer will apply (0-3), for the memory "
           "of the weights, gradients and state">,
    Option<"zeroAxis", "zero-axis", "std::string", "\"dp\"",
           "The mesh axis ZeRO shards over">,
    Option<"offloadOptimizer", "offload-optimizer", "bool", "false",
           "The optimizer state lives in host memory (pc-offload), outside "
           "the device's budget">,
    Option<"recompute", "recompute", "std::string", "\"\"",
           "pc-recompute's mode to count memory for (full or selective: "
           "the backward reads its segments' values made again)">,
    Option<"inPlaceUpdates", "in-place-updates", "bool", "false",
           "The session updates parameters in place: a weight's old pieces "
           "go at its update, not at the step's end (pc-memory-plan's "
           "option of the same name)">,
  ];
  let statistics = [
    Statistic<"numNodes", "nodes", "Ops, parameters and inputs planned">,
    Statistic<"numStates", "states", "Signatures and layouts considered">,
    Statistic<"numEliminated", "eliminated", "Nodes solved by elimination">,
  ];
}

def SbpPropagate : Pass<"pc-sbp-propagate", "::mlir::ModuleOp"> {
  let summary = "Gives every value an SBP layout and every op a signature";
  let description = [{
    Starts from the layouts written in the IR (function arguments and
    results, parameters, annotated op results and `pc.to_sbp`
    constraints) and decides the layout of every other value.

    Each logical op picks, among its nd SBP signatures, the one whose
    operand conversions (and, for an annotated result, result conversion)
    cost the least boxing, then the least work per device, then the first.
    Sweeps alternate forward (ops take layouts from their operands) and
    backward (undecided inputs, parameters and constants take the layout
    their consumers want) until nothing changes; a final forward sweep
    fixes every op's signature. The result is deterministic.

    Each op records the layouts it consumes its operands in as
    `pc.operand_sbps`; `pc-insert-boxing` turns differences into
    `pc.boxing` ops. Values left undecided (nothing connects them to an
    annotation) are broadcast on the module's only mesh; with several
    meshes that is an error.

    ```mlir
    // input: only %x and %w are annotated
    %y = pc.matmul %x, %w : (tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>,
        tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<8x64xf32>
    // output
    %y = pc.matmul %x, %w {pc.operand_sbps = [...]} : (...)
        -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
    ```
  }];
  let statistics = [
    Statistic<"numDecided", "decided-values", "Values given a layout">,
    Statistic<"numSignatures", "signatures", "Ops given a signature">,
    Statistic<"numCandidates", "candidates", "Nd signatures evaluated">,
  ];
}

def InsertBoxing : Pass<"pc-insert-boxing", "::mlir::ModuleOp"> {
  let summary = "Makes every layout change explicit as pc.boxing";
  let description = [{
    For every operand whose layout differs from the one its op consumes it
    in (`pc.operand_sbps`), inserts a `pc.boxing` right after the value's
    definition. One boxing serves all consumers that want the same layout.
    `pc.to_sbp` becomes a `pc.boxing`, or disappears when the layouts are
    equal.
  }];
  let statistics = [
    Statistic<"numBoxings", "boxings", "pc.boxing ops inserted">,
  ];
}

def OptimizeBoxing : Pass<"pc-optimize-boxing", "::mlir::ModuleOp"> {
  let summary = "Removes redundant boxing";
  let description = [{
    - A chain of boxings A -> B -> C whose intermediate value has no other
      use is planned as one boxing A -> C.
    - A boxing A -> A, including a pair A -> B -> A, vanishes.
    - An all-reduce followed by a local slice of its result (and no other
      use) becomes one reduce-scatter.
  }];
  let statistics = [
    Statistic<"numFolded", "folded", "Boxings merged or removed">,
    Statistic<"numFused", "fused", "All-reduce + slice pairs fused">,
  ];
}

def LowerBoxing : Pass<"pc-lower-boxing", "::mlir::ModuleOp"> {
  let summary = "Lowers pc.boxing to the planner's cheapest collectives";
  let description = [{
    Replaces each `pc.boxing` by the steps of the cheapest plan: collectives
    (`pc.all_reduce`, `pc.all_gather`, `pc.reduce_scatter`,
    `pc.all_to_all`) and local steps (`pc.local_slice`,
    `pc.local_partial`) on the right mesh axes. Between meshes, partials are
    reduced on the source, a `pc.transfer` moves exactly the needed pieces,
    and partials are recreated on the destination.
  }];
  let statistics = [
    Statistic<"numCollectives", "collectives", "Collectives emitted">,
    Statistic<"numLocalSteps", "local-steps", "Local steps emitted">,
  ];
}

def Partition : Pass<"pc-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrites logical graphs into per-device programs";
  let description = [{
    Replaces every logical graph `@f` (whose layouts are decided and whose
    boxings are lowered) by per-device programs: local shapes, local ops,
    and collectives in their per-device form over concrete groups. A step
    over mesh axes of size 1 (a group of one device) moves nothing and is
    dropped: on a `1x1` mesh, layouts that name splits or partials emit no
    collective.

    Ranks whose programs are identical share one program (SPMD), so the
    work does not grow with the device count: only values and steps whose
    pieces are uneven are examined rank by rank. Uneven splits give one
    program per class of ranks with the same local shapes.

    Each program is a `func.func @f.partK` with
    - `pc.graph = "f"`: the logical graph it comes from;
    - `pc.ranks`: the global ranks that run it;
    - on each argument and result, `pc.index` (its position in `@f`) and
      `pc.logical_type` (its logical type and layout).

    ```mlir
    func.func @f.part0(%x: tensor<4x64xf32> {pc.index = 0 : i64,
                         pc.logical_type = tensor<8x64xf32, #pc.sbp<@m, [S(0)]>>})
        attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} { ... }
    ```
  }];
  let statistics = [
    Statistic<"numPrograms", "programs", "Per-device programs emitted">,
    Statistic<"numRanks", "ranks", "Ranks covered">,
  ];
}

def PrintSignatures : Pass<"pc-print-signatures", "::mlir::ModuleOp"> {
  let summary = "Prints the 1-D SBP signatures of every logical op";
  let description = [{
    For every logical op, prints the 1-D signatures it offers on a mesh
    axis of `axis-size` devices for its logical shapes, in the order
    propagation considers them. The IR is unchanged. For inspecting and
    testing the signature rules of docs/sbp.md.
  }];
  let options = [
    Option<"axisSize", "axis-size", "int64_t", "2",
           "Devices on the mesh axis">,
  ];
}

def BoxingReport : Pass<"pc-boxing-report", "::mlir::ModuleOp"> {
  let summary = "Prints the collectives of every boxing and their bytes";
  let description = [{
    For every `pc.boxing` (run it before `pc-lower-boxing`), prints the
    planned steps, the planning cost, and the exact bytes each rank sends
    and receives, then the totals. The IR is unchanged.
  }];
}

#endif // PC_PASSES_TD
