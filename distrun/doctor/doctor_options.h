#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace distrun::doctor {

// `distrun doctor`'s settings (docs/doctor.md). A plain value.
struct DoctorOptions {
  std::string format = "table";  // --format table|json|nhc
  // --min-busbw GB/S: the allreduce's bus bandwidth below this fails;
  // unset: measured and reported, never failed.
  std::optional<double> minBusbw;
  // --checks a,b,c: the checks to run (names in checks.h); empty: all.
  std::vector<std::string> checks;
  std::optional<std::string> site;  // --site NAME ("none": no profile)
  // --nproc-per-node N: ranks per node the training will run, which the CPU
  // binding and GPU checks plan for; unset: the step's tasks per node when
  // above 1, else the node's GPUs, else 1.
  std::optional<int> nprocPerNode;
  // --time-limit S: how long one check may run on a node before it is
  // reported as hung and abandoned.
  std::chrono::seconds timeLimit{60};
  // --container IMAGE: the Python check imports torch inside this image
  // (`distrun enter IMAGE -- PYTHON ...`).
  std::optional<std::string> container;
  // --python PROGRAM ("none": the training needs no Python); unset: the
  // rule of distrun run (python_choice.h: DISTRUN_PYTHON, PYTHON_EXEC,
  // python3), read from the task's environment.
  std::optional<std::string> python;
  // --snapshot PATH: the snapshot the training will write; its folder's
  // free space is checked. Unset: that check is skipped.
  std::optional<std::string> snapshot;
  // A node slower than the median matrix multiply by more than this
  // fraction is a straggler (--straggler-margin, percent on the command line).
  double stragglerMargin = 0.25;
};

}  // namespace distrun::doctor
