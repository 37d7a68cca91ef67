#pragma once

#include <cstddef>
#include <optional>

#include "distrun/doctor/check_result.h"
#include "distrun/doctor/meeting.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// What the "allreduce" check measured: `distrun bench all_reduce`'s sweep,
// short, with one rank per node over Gloo, so the figure is the network's
// between the nodes.
struct AllreduceFigures {
  int nodes = 0;
  size_t bytes = 0;      // the largest size of the sweep
  double busbwGbps = 0;  // bus bandwidth at that size (out of place), GB/s
  double timeUs = 0;
  long long wrong = 0;  // elements that came back wrong (should be 0)
};

// Runs the sweep; every node's first task calls it at once (rank = node
// rank), each joining through `meeting`'s store. The same figures on every
// node. What comm::connect and the collectives throw (TimeoutError,
// CommunicationError) when a node fails.
AllreduceFigures measureAllreduce(const ProbeContext& ctx, const Meeting& meeting);

// The result: fail for wrong values or a bus bandwidth below `minBusbw`
// (GB/s); ok otherwise, the figure in detail and values.
CheckResult judgeAllreduce(const AllreduceFigures& figures, std::optional<double> minBusbw);

}  // namespace distrun::doctor
