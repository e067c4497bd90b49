//===- Schedule.h - Pipeline schedules as data -------------------*- C++
//-*-===//
//
// A pipeline schedule is, per device stage, the ordered list of actions it
// runs in one training step: F (forward), B (backward; in zero-bubble
// schedules only the input gradients) and W (weight gradients, zero-bubble
// only) of one model stage for one micro-batch. Model stage c lives on
// device stage c mod p, so interleaved schedules give each device v model
// stages. This library builds the schedules (GPipe, 1F1B, interleaved 1F1B,
// ZB-H1), checks any schedule against the pipeline's dependencies, and
// predicts its timeline, bubble and in-flight activations. It is plain
// C++: the compiler, the tools and the tests use it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PIPELINE_SCHEDULE_H
#define PC_PIPELINE_SCHEDULE_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pc::pipeline {

enum class ActionKind : uint8_t { F, B, W };

struct Action {
  ActionKind kind = ActionKind::F;
  /// The model stage (chunk); it runs on device stage `stage % p`.
  int64_t stage = 0;
  int64_t microBatch = 0;

  friend bool operator==(const Action &, const Action &) = default;
  friend auto operator<=>(const Action &, const Action &) = default;
};

/// "F(1, mb 3)".
std::string describe(const Action &a);
char kindLetter(ActionKind k);

enum class ScheduleKind : uint8_t {
  GPipe,
  OneFOneB,
  Interleaved,
  ZeroBubbleH1
};

/// "gpipe", "1f1b", "interleaved", "zb-h1".
std::string_view scheduleName(ScheduleKind k);
std::optional<ScheduleKind> parseScheduleKind(std::string_view name);
/// Whether the schedule splits the backward pass into B and W.
bool splitsBackward(ScheduleKind k);

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int64_t devices = 1;       // p: device stages
  int64_t microBatches = 1;  // m
  int64_t virtualStages = 1; // v: model stages per device (interleaved)
  /// False for a forward-only pipeline (evaluation, inference): its lists
  /// hold F actions only, in the order the schedule runs its forwards.
  bool backward = true;

  int64_t modelStages() const { return devices * virtualStages; }
};

/// An empty string, or why `spec` is not a schedule pc can build (a count
/// below 1, virtual stages other than 1 outside the interleaved schedule).
std::string validate(const ScheduleSpec &spec);

struct Schedule {
  ScheduleSpec spec;
  /// Per device stage, its actions in order.
  std::vector<std::vector<Action>> perDevice;
};

/// The schedule of `spec` (which must validate). Every schedule is built by
/// list scheduling over unit-cost actions with the schedule's priorities and
/// in-flight limits, so it exists, and is correct, for every m, p and v:
///  - GPipe: all forwards, then all backwards;
///  - 1F1B: p - d forwards in flight on device d, a backward as soon as one
///    is ready;
///  - interleaved: Megatron's order over groups of p micro-batches (the last
///    group may be smaller), with its warm-up as the in-flight limit;
///  - ZB-H1: 1F1B's limit on forwards in flight, a W run when neither B nor
///    an allowed F is ready (or when p - 1 already wait), which fills the
///    bubble: (p - 1)(F + B - W) instead of 1F1B's (p - 1)(F + B + W).
/// Every model stage's backwards come in micro-batch order, so gradients
/// accumulate in the same order on every schedule. A forward-only spec
/// gives each device its forwards alone, in the schedule's forward order.
Schedule buildSchedule(const ScheduleSpec &spec);

/// Relative action costs for predictions. A merged backward (B and W in one
/// action) costs b + w.
struct ActionCosts {
  double f = 1, b = 1, w = 1;
  /// When set, each action's own cost (a measured duration), instead.
  std::function<double(const Action &)> of;
};

struct TimedAction {
  Action action;
  double start = 0, end = 0;
};

struct Prediction {
  /// Per device stage, its actions with start and end times.
  std::vector<std::vector<TimedAction>> timeline;
  double makespan = 0;
  /// Mean over devices of the idle share of the makespan.
  double bubble = 0;
  /// Per device, the most micro-batches (per model stage) whose
  /// activations are held at once: from F until the action that ends their
  /// backward (B, or W when split).
  std::vector<int64_t> peakInFlight;
};

/// What an action waits for on other devices (or earlier on its own). The
/// default is the chain of model stages: F(c) after F(c-1), B(c) after
/// B(c+1) (the last stage's B after its F), W(c) after B(c).
using Dependencies = std::function<std::vector<Action>(const Action &)>;
Dependencies chainDependencies(const ScheduleSpec &spec);

/// Checks `schedule` and predicts its timeline: every action of every model
/// stage and micro-batch appears once, on its device, with F before B
/// before W; and the devices, each following its list, never wait on each
/// other in a cycle. On failure returns the message (naming the device
/// stages and actions); on success fills `out`.
/// `deviceName` names a device stage in messages ("device stage 1" by
/// default; the compiler names its ranks).
std::string
checkSchedule(const Schedule &schedule, const Dependencies &deps,
              const ActionCosts &costs, Prediction &out,
              const std::function<std::string(int64_t)> &deviceName = {});

/// The classic bubble of GPipe and 1F1B: (p - 1) / (m + p - 1).
double classicBubble(int64_t devices, int64_t microBatches);

/// An SVG timeline: one row per device stage, F, B and W in their colours,
/// each box labelled with its micro-batch (and model stage when v > 1).
std::string renderSvg(const std::vector<std::vector<TimedAction>> &timeline,
                      std::string_view title, int64_t virtualStages);

/// "F1.3": F of model stage 1, micro-batch 3 (the runtime's trace names
/// actions so), and back; nothing when `text` is not one.
std::string shortName(const Action &a);
std::optional<Action> parseShortName(std::string_view text);

/// One op's firing in a measured run.
struct MeasuredOp {
  int64_t rank = 0;
  std::string action;  // shortName, or empty
  bool compute = true; // the compute stream (else communication)
  double startUs = 0, durationUs = 0;
};

struct Measured {
  /// Per device stage (its lowest rank), each action from its first to its
  /// last compute op, in µs from the step's first action.
  std::vector<std::vector<TimedAction>> timeline;
  /// Mean over the ranks that run actions of the share of the step (first
  /// action to last) their compute stream was idle.
  double bubble = 0;
  /// Per action, its compute time (summed over its ops; the longest over
  /// the ranks of a stage), for replaying the schedule with real costs.
  std::map<Action, double> computeUs;
};

/// The measured schedule of a traced step.
Measured measureSchedule(const std::vector<MeasuredOp> &ops);

} // namespace pc::pipeline

#endif // PC_PIPELINE_SCHEDULE_H
