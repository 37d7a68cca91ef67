#pragma once

#include <string>
#include <string_view>

namespace distrun::submit {

// A time limit in Slurm's own forms (sbatch --time): MINUTES, MINUTES:SECONDS,
// HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES and
// DAYS-HOURS:MINUTES:SECONDS. Returns seconds; UsageError naming `flag`
// and the forms for anything else (e.g. "1h", "90m", "-5", "1:2:3:4").
long parseSlurmTime(std::string_view text, const std::string& flag);

// Seconds back in the form sbatch prints: "D-HH:MM:SS", days only when
// nonzero.
std::string formatSlurmTime(long seconds);

}  // namespace distrun::submit
