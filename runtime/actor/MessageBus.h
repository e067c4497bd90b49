//===- MessageBus.h - Fixed-size messages between actors --------*- C++ -*-===//
//
// The actors of one device talk through one bus: a multi-producer,
// single-consumer inbox of fixed-size messages. Stream workers post `Done`
// when a firing finished; the device's dispatcher posts `Req` (a register is
// readable) and `Ack` (a register is no longer needed) between actors.
// Messages are plain 24-byte structs; payloads never travel on the bus
// (registers are addressed by iteration, the data stays where the kernel
// wrote it), and a failure's status is parked in a side table so the
// message stays fixed-size.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_ACTOR_MESSAGEBUS_H
#define PC_RUNTIME_ACTOR_MESSAGEBUS_H

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace pc::runtime::actor {

enum class MessageKind : uint8_t {
  /// From a producer: iteration `iteration` of its register is readable.
  Req,
  /// From a consumer: it is done with iteration `iteration` of the
  /// producer's register.
  Ack,
  /// From a stream: the firing of `iteration` finished (`failed` says how).
  Done,
};

struct Message {
  int64_t iteration;
  uint32_t dst; // the actor that handles it
  uint32_t src; // the actor it is from (dst itself for Done)
  MessageKind kind;
  bool failed;
  /// Done: when the firing ended, in µs from the run's origin modulo 2^32
  /// (its handler may come much later: a lazy Done waits for a refill).
  uint32_t endUs = 0;
};
static_assert(sizeof(Message) == 24, "messages are fixed-size");

class MessageBus {
public:
  /// Posts from any thread. Without `wake`, a sleeping dispatcher is left
  /// asleep: the message waits for the next one posted with `wake`, or for
  /// the dispatcher's next look. The poster must make sure one comes.
  void post(const Message &m, bool wake = true) {
    bool notify;
    {
      std::lock_guard<std::mutex> lock(mu);
      inbox.push_back(m);
      notify = wake && waiting && !woken;
      woken |= notify;
    }
    if (notify)
      cv.notify_one();
  }

  /// Swaps everything posted so far into `out` (cleared first); blocks while
  /// there is nothing. Only the dispatcher calls it. It does not poll first:
  /// with more threads than cores (CPU devices), each poll is a switch to
  /// another thread.
  void drain(std::vector<Message> &out) {
    out.clear();
    std::unique_lock<std::mutex> lock(mu);
    if (inbox.empty()) {
      waiting = true;
      cv.wait(lock, [&] { return woken; });
      waiting = woken = false;
    }
    out.swap(inbox);
  }

private:
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Message> inbox;
  bool waiting = false, woken = false;
};

} // namespace pc::runtime::actor

#endif // PC_RUNTIME_ACTOR_MESSAGEBUS_H
