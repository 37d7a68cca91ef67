#pragma once

#include "distrun/doctor/check_result.h"

namespace distrun::doctor {

// Cross-node checks that rank 0 derives from every node's results, each
// adding one result per node to `report` (and its name to report.checks).

// "straggler": a node whose "matmul" value "matmul_ms" exceeds the median
// of all nodes by more than `margin` (0.25: 25 %) fails, naming its time and
// the median; skipped with a reason on one node or when no node measured.
void flagStragglers(DoctorReport& report, double margin);

// "torch-version": the "python" results' fact "torch_version" must be the
// same on every node that has one; nodes on a version other than the most
// common one fail, naming both versions.
void compareTorchVersions(DoctorReport& report);

}  // namespace distrun::doctor
