#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "distrun/doctor/check_result.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// Runs the checks of `checks` that ctx->options.checks selects (all when
// empty) on this node and returns their results in the order of `checks`.
// Checks without runsAlone run at once, each on its own thread; those with
// it run after, one at a time. Each gets ctx->limit(), which a check that
// runs a program passes on to it (runToolWithin kills it then); a check
// still running a few seconds after the limit is reported as failed ("did
// not finish within 60 s") and
// abandoned (its thread is detached and keeps `ctx` alive; the process
// must end with _exit-like haste, which apps/distrun-doctor does). An
// Error or other exception out of a check becomes a fail result with its
// message. `seconds` of each result is filled in.
std::vector<CheckResult> runChecks(const std::vector<Check>& checks,
                                   std::shared_ptr<const ProbeContext> ctx);

}  // namespace distrun::doctor
