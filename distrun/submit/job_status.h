#pragma once

#include <optional>
#include <string>

#include "distrun/common/status_record.h"

namespace distrun::submit {

// The job's status file (docs/submit.md, "Following a job"): the batch
// script names it in DISTRUN_STATUS_FILE, the agent that runs rank 0 keeps
// the job's last status record there (docs/launcher.md, "Status records"),
// and `distrun submit --wait` shows it. It lies next to the job's output
// file: OUTPUT.status.

// The status file of the job whose output file is `outputPath`.
std::string statusFileOf(const std::string& outputPath);

// The status file for the batch script, as a double-quoted shell word
// that expands to statusFileOf(the output file) inside the job: sbatch's
// %j, %A, %x, %u and %% in `outputPattern` become $SLURM_JOB_ID,
// ${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}, $SLURM_JOB_NAME, $(id -un) and %.
// nullopt for a pattern that names a node or task (%N, %t, ...), whose
// job has no one output file.
std::optional<std::string> statusFileWord(const std::string& outputPattern);

// The record in the status file at `path`; nullopt when there is none
// (not written yet, or not a record).
std::optional<StatusRecord> readStatusFile(const std::string& path);

// The status line of a followed job: "job 42 PENDING 0:12" (the time in
// that state), then with the job's record its progress after two spaces
// ("job 42 RUNNING 1:05  epoch 1/3  step 120/500  loss 0.2345 ...").
std::string jobStatusText(const std::string& jobId, const std::string& state, double secondsInState,
                          const std::optional<StatusRecord>& record);

}  // namespace distrun::submit
