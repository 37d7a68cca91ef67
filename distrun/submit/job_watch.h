#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "distrun/common/live_line.h"
#include "distrun/submit/sbatch.h"

namespace distrun::submit {

// What following a job reads from and does to the world (`--wait`): the
// Slurm commands, time, Ctrl-C and the terminal, so that tests script them.
struct WatchWorld {
  SlurmTool slurm;
  // Sleeps up to `seconds`; returns early when Ctrl-C arrives.
  std::function<void(double seconds)> sleep;
  // Whether Ctrl-C arrived since the last call.
  std::function<bool()> interrupted;
  // Asks a yes/no question on the terminal; nullopt when none is attached.
  std::function<std::optional<bool>(const std::string& question)> ask;
  std::ostream& out;  // the job's output, as it grows
  std::ostream& err;  // distrun's own lines, and the status line
  // The job's status line on `err` (--status, resolved): kLine, its state
  // and progress redrawn under the output (whole lines of it only);
  // kPlain, a line every 30 s once the job's status file has a record.
  StatusMode status = StatusMode::kNone;
  std::function<int()> columns;  // kLine: the terminal's width
};

struct WatchRequest {
  std::string jobId;
  std::string outputPath;  // the job's output file; empty: not streamed
  std::string statusPath;  // the job's status file (job_status.h); empty: none
};

// Follows the job to its end: one `squeue` per interval (1 s, doubling to
// 30 s), the output file copied to `out` as it grows (every 0.5 s), a line
// on `err` when the job's state changes, and the status line (world.status)
// with the job's state and the record of its status file. Returns the job's exit code (its
// batch script's status; 128+N for signal N) from `scontrol show job`,
// else `sacct` where accounting exists; Error (69) when Slurm no longer
// knows it. Ctrl-C: with a terminal, asks whether to cancel the job
// (scancel); without one, leaves it running and says so; returns 130.
int watchJob(const WatchRequest& request, WatchWorld& world);

// The job's output file as sbatch names it: %j and %A the job id, %x the
// job name, %u the user, %% a percent sign. nullopt for a pattern that
// names a node or task (%N, %n, %t, %s, ...), which has no one file.
std::optional<std::string> expandOutputPattern(const std::string& pattern, const std::string& id,
                                               const std::string& jobName, const std::string& user);

}  // namespace distrun::submit
