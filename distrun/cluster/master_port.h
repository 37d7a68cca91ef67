#pragma once

#include <string>

namespace distrun::cluster {

// MASTER_PORT derived from the job and step ids, so every task of a step
// computes the same port with no communication, two steps of one job get
// different ports, and so do two jobs whose ids are close:
//
//   port = kFirstDerivedPort + (job * 64 + step) mod kDerivedPortCount
//
// job is the numeric job id (or a hash of a non-numeric one), step the step
// id mod 64 (batch and interactive steps map to 63 and 62). Jobs whose ids
// differ by less than 625 never share a port for the same step; steps
// 0..61 of one job never share one. The range [20000, 30000) lies below
// Linux's ephemeral ports (32768-60999), so outgoing connections do not
// take it.
inline constexpr int kFirstDerivedPort = 20000;
inline constexpr int kDerivedPortCount = 10000;

int derivedMasterPort(const std::string& jobId, const std::string& stepId);

}  // namespace distrun::cluster
