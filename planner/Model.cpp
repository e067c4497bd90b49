//===- Model.cpp - The models the planner plans ---------------------------===//

#include "planner/Model.h"

#include "llvm/ADT/StringExtras.h"

namespace pc::planner {

const char *recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "?";
}

int64_t TransformerSpec::layerParameters() const {
  int64_t h = hidden, f = ffnWidth();
  return 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
}

int64_t TransformerSpec::parameters() const {
  return layers * layerParameters() + vocab * hidden + seq * hidden +
         2 * hidden;
}

double TransformerSpec::iterationFlops(int64_t batch,
                                       Recompute recompute) const {
  double B = batch, s = seq, l = layers, h = hidden, V = vocab;
  // Forward products per layer and sequence: 24 s h^2 (with f = 4h;
  // 8 s h^2 + 4 s h f in general) + 4 s^2 h (attention scores and values).
  double dense = 8 * s * h * h + 4 * s * h * ffnWidth();
  double core = 4 * s * s * h;
  double layer = B * l * (dense + core);
  double head = 2 * B * s * h * V;
  // Backward doubles each product; the head is never recomputed.
  double total = 3 * layer + 3 * head;
  if (recompute == Recompute::Full)
    total += layer;
  else if (recompute == Recompute::Selective)
    total += B * l * core;
  return total;
}

namespace {
struct Preset {
  const char *name;
  int64_t layers, hidden, heads;
};
// GPT-3 (Brown et al. 2020, Table 2.1) and Korthikanti et al. (2022),
// Table 3. Sequence 2048 and vocabulary 51200 unless overridden.
constexpr Preset kPresets[] = {
    {"gpt3-125m", 12, 768, 12},         {"gpt3-350m", 24, 1024, 16},
    {"gpt3-760m", 24, 1536, 16},        {"gpt3-1.3b", 24, 2048, 16},
    {"gpt3-2.7b", 32, 2560, 32},        {"gpt3-6.7b", 32, 4096, 32},
    {"gpt3-13b", 40, 5120, 40},         {"gpt3-175b", 96, 12288, 96},
    {"megatron-22b", 48, 6144, 64},     {"megatron-175b", 96, 12288, 96},
    {"megatron-530b", 105, 20480, 128}, {"megatron-1t", 128, 25600, 160},
};

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

std::vector<std::string> presetNames() {
  std::vector<std::string> names;
  for (const Preset &p : kPresets)
    names.push_back(p.name);
  return names;
}

llvm::Expected<TransformerSpec> parseModel(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  if (parts.empty())
    return fail("no model given: name a preset (" +
                llvm::join(presetNames(), ", ") +
                ") or give layers=..,hidden=..,heads=..");
  TransformerSpec spec;
  spec.name = text.str();
  size_t first = 0;
  if (!parts[0].contains('=')) {
    const Preset *found = nullptr;
    for (const Preset &p : kPresets)
      if (parts[0] == p.name)
        found = &p;
    if (!found)
      return fail("unknown model '" + parts[0] + "': the presets are " +
                  llvm::join(presetNames(), ", ") +
                  "; or give layers=..,hidden=..,heads=..");
    spec.layers = found->layers;
    spec.hidden = found->hidden;
    spec.heads = found->heads;
    first = 1;
  }
  for (size_t i = first; i < parts.size(); ++i) {
    auto [key, value] = parts[i].split('=');
    int64_t n = 0;
    // Bounded so that the parameter counts fit in 64 bits.
    if (value.trim().getAsInteger(10, n) || n < 1 || n > 10000000)
      return fail("model: '" + parts[i] +
                  "' is not key=integer from 1 to 10^7");
    key = key.trim();
    if (key == "layers")
      spec.layers = n;
    else if (key == "hidden")
      spec.hidden = n;
    else if (key == "heads")
      spec.heads = n;
    else if (key == "seq")
      spec.seq = n;
    else if (key == "vocab")
      spec.vocab = n;
    else if (key == "ffn")
      spec.ffn = n;
    else
      return fail("model: unknown key '" + key +
                  "' (layers, hidden, heads, seq, vocab, ffn)");
  }
  if (spec.hidden % spec.heads != 0)
    return fail("model: hidden " + llvm::Twine(spec.hidden) +
                " is not a multiple of heads " + llvm::Twine(spec.heads));
  return spec;
}

} // namespace pc::planner
