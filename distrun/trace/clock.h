#pragma once

// The trace clock: CLOCK_MONOTONIC in microseconds, plus this process's
// test skew (DISTRUN_TRACE_CLOCK_SKEW_US, set by startProcess; 0 unless a
// test asked for one).
namespace distrun::trace {

// CLOCK_MONOTONIC and CLOCK_REALTIME, in microseconds.
double monotonicUs();
double realtimeUs();

}  // namespace distrun::trace
