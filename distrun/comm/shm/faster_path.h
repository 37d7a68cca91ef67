#pragma once

#include <cstddef>
#include <cstdint>

namespace distrun::comm {

// Which of two ways of running one kind of call (way 0 or way 1) the next
// call takes: the one whose last call moved its bytes faster, and every
// `probeEvery`-th call the other one, so that a change in which is faster
// is seen (a VM whose host moves its vCPUs changes it within seconds:
// bench/results/between-cores.txt). Way 0 until it has been
// timed, then way 1 until it has; the first call each way is not timed,
// since it pays for what a first call touches (pages of the buffers, the
// slots, the scratch) and would make that way look slower than it is.
class FasterPath {
 public:
  explicit FasterPath(uint64_t probeEvery) : probeEvery_(probeEvery < 2 ? 2 : probeEvery) {}
  int next() const;
  // A call that took `way` moved `bytes` in `seconds`.
  void took(int way, size_t bytes, double seconds);

 private:
  uint64_t probeEvery_;
  uint64_t timed_ = 0;
  uint64_t calls_[2] = {0, 0};  // each way's, the untimed first included
  double bytesPerSecond_[2] = {0, 0};
};

}  // namespace distrun::comm
