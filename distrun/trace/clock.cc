#include "distrun/trace/clock.h"

#include <time.h>

namespace distrun::trace {

namespace {

double microseconds(clockid_t id) {
  timespec t{};
  ::clock_gettime(id, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

}  // namespace

double monotonicUs() { return microseconds(CLOCK_MONOTONIC); }
double realtimeUs() { return microseconds(CLOCK_REALTIME); }

}  // namespace distrun::trace
