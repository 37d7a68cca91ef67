#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace distrun::binding {

// Logical CPU numbers (the kernel's, as in /proc/cpuinfo and taskset),
// ascending and without repeats.
using CpuList = std::vector<int>;

// Parses the kernel's list syntax, "0-7,16,18-19" (taskset -c, cpuset.cpus,
// srun --cpu-bind=map_cpu). Throws ConfigError naming `what` and the text
// when it is not such a list.
CpuList parseCpuList(std::string_view text, const std::string& what);

// The same syntax back, ranges collapsed: {0,1,2,3,7} -> "0-3,7".
std::string formatCpuList(const CpuList& cpus);

// Slurm's mask_cpu form: hexadecimal, bit i for CPU i, "0x" first and no
// leading zeros: {1,...,7} -> "0xfe". An empty list is "0x0".
std::string cpuMask(const CpuList& cpus);

// The CPUs of `cpus` that are not in `removed`.
CpuList without(const CpuList& cpus, const CpuList& removed);

// The CPUs of `cpus` that are also in `allowed`.
CpuList onlyWithin(const CpuList& cpus, const CpuList& allowed);

}  // namespace distrun::binding
