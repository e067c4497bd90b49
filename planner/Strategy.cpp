//===- Strategy.cpp - One way to train a model on a cluster ---------------===//

#include "planner/Strategy.h"

namespace pc::planner {

std::string Strategy::str() const {
  std::string s = "dp" + std::to_string(dp) + " tp" + std::to_string(tp) +
                  " pp" + std::to_string(pp);
  if (virtualStages > 1)
    s += " v" + std::to_string(virtualStages);
  s += ", " + std::to_string(microBatches) + "x" +
       std::to_string(microBatchSize);
  if (pp > 1)
    s += " " + std::string(pipeline::scheduleName(schedule));
  if (zero)
    s += ", zero" + std::to_string(zero);
  if (recompute != Recompute::None)
    s += std::string(", ") + recomputeName(recompute);
  if (sequenceParallel)
    s += ", sp";
  s += ", " + dtype;
  if (offloadOptimizer)
    s += ", offload";
  return s;
}

std::vector<std::string> Strategy::runOptions() const {
  std::vector<std::string> o;
  if (pp > 1) {
    o.push_back("--stages=" + std::to_string(pp));
    o.push_back("--pipeline-schedule=" +
                std::string(pipeline::scheduleName(schedule)));
    if (virtualStages > 1)
      o.push_back("--virtual-stages=" + std::to_string(virtualStages));
  }
  if (microBatches > 1)
    o.push_back("--micro-batches=" + std::to_string(microBatches));
  if (zero)
    o.push_back("--zero=" + std::to_string(zero));
  if (recompute != Recompute::None)
    o.push_back(std::string("--recompute=") + recomputeName(recompute));
  if (dtype != "f32")
    o.push_back("--mixed-precision=" + dtype);
  if (offloadOptimizer)
    o.push_back("--offload=optimizer");
  return o;
}

std::string Strategy::family() const {
  int dims = (dp > 1) + (tp > 1) + (pp > 1);
  std::string f;
  if (dims == 0)
    f = offloadOptimizer ? "offload" : "single device";
  else if (dims > 1)
    f = "3d";
  else if (dp > 1)
    f = zero ? "zero" : "data parallel";
  else
    f = tp > 1 ? "tensor parallel" : "pipeline parallel";
  if (offloadOptimizer && dims > 0)
    f += " + offload";
  return f;
}

} // namespace pc::planner
