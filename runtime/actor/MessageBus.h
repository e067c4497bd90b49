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

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
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
};
static_assert(sizeof(Message) == 24, "messages are fixed-size");

class MessageBus {
public:
  /// Posts from any thread.
  void post(const Message &m) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu);
      wake = waiting && inbox.empty();
      inbox.push_back(m);
      pending.store(true, std::memory_order_release);
    }
    if (wake)
      cv.notify_one();
  }

  /// Swaps everything posted so far into `out` (cleared first); blocks while
  /// there is nothing. Only the dispatcher calls it.
  void drain(std::vector<Message> &out) {
    out.clear();
    // A firing usually finishes within microseconds of the last: poll a
    // little before sleeping, since a wake-up costs more than that.
    for (int i = 0; i < kSpins && !pending.load(std::memory_order_acquire); ++i)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(mu);
    waiting = true;
    cv.wait(lock, [&] { return !inbox.empty(); });
    waiting = false;
    out.swap(inbox);
    pending.store(false, std::memory_order_relaxed);
  }

private:
  std::mutex mu;
  std::condition_variable cv;
  static constexpr int kSpins = 0;
  std::vector<Message> inbox;
  bool waiting = false;
  std::atomic<bool> pending{false};
};

} // namespace pc::runtime::actor

#endif // PC_RUNTIME_ACTOR_MESSAGEBUS_H
