#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace distrun::testing {

// Generates well-formed Slurm hostlists that scontrol 22.05 accepts: plain
// names, one to three bracket groups with zero-padded ranges, comma lists,
// repeats, mixed separators. No suffix after the last group (22.05 rejects
// it). Deterministic for a seed, so a failure can be replayed.
class HostlistGenerator {
 public:
  explicit HostlistGenerator(uint32_t seed) : rng_(seed) {}
  std::string next();

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::string name();
  std::string number(int value, int width);
  std::string range(int maxSpan);
  std::string group(int maxSpan);
  std::string token();

  std::mt19937 rng_;
};

}  // namespace distrun::testing
