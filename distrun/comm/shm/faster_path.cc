#include "distrun/comm/shm/faster_path.h"

namespace distrun::comm {

int FasterPath::next() const {
  if (calls_[0] < 2) return 0;
  if (calls_[1] < 2) return 1;
  const int faster = bytesPerSecond_[1] > bytesPerSecond_[0] ? 1 : 0;
  return timed_ % probeEvery_ == probeEvery_ - 1 ? 1 - faster : faster;
}

void FasterPath::took(int way, size_t bytes, double seconds) {
  if (way < 0 || way > 1 || bytes == 0 || !(seconds > 0)) return;
  if (calls_[way]++ == 0) return;
  bytesPerSecond_[way] = static_cast<double>(bytes) / seconds;
  ++timed_;
}

}  // namespace distrun::comm
