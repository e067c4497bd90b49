//===- Model.h - The models the planner plans -------------------*- C++ -*-===//
//
// A GPT-style decoder as the planner sees it: shapes only, nothing
// allocated, so that GPT-3 and 1T-parameter models plan in milliseconds.
// Presets name the GPT-3 family and the models of Korthikanti et al.
// (2022); any other is given as key=value pairs.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_MODEL_H
#define PC_PLANNER_MODEL_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pc::planner {

enum class Recompute : uint8_t { None, Selective, Full };
const char *recomputeName(Recompute r);

struct TransformerSpec {
  std::string name;
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t seq = 2048;
  int64_t vocab = 51200;
  /// The MLP's inner width (4 * hidden in GPT).
  int64_t ffn = 0;

  int64_t ffnWidth() const { return ffn ? ffn : 4 * hidden; }
  /// Weights of one layer: attention (4h^2 + 4h), MLP (2 h f + f + h), two
  /// layer norms (4h).
  int64_t layerParameters() const;
  /// Every weight: the layers, token and position embeddings (the output
  /// head shares the token embedding), the final layer norm.
  int64_t parameters() const;
  /// The FLOPs of one training iteration over `batch` sequences, counting
  /// every matrix product: with full recompute Narayanan et al.'s (2021,
  /// eq. 3) 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); without, the layers'
  /// 72 B s l h^2 (1 + s/(6h)) and the head's 6 B s h V (the head is never
  /// recomputed); selective recompute adds the attention core's products
  /// once more.
  double iterationFlops(int64_t batch, Recompute recompute) const;
};

/// The presets' names, for --help and errors.
std::vector<std::string> presetNames();

/// A preset ("gpt3-175b", "megatron-530b", ...) or key=value pairs
/// ("layers=24,hidden=2048,heads=16[,seq=..,vocab=..,ffn=..]"); a preset
/// may be followed by overrides ("gpt3-1.3b,seq=1024").
llvm::Expected<TransformerSpec> parseModel(llvm::StringRef text);

} // namespace pc::planner

#endif // PC_PLANNER_MODEL_H
