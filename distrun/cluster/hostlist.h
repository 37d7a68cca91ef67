#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace distrun::cluster {

// Slurm's hostlist grammar (src/common/hostlist.c), as `scontrol show
// hostnames` expands it:
//
//   list   := token { sep token }      sep: ',' ' ' '\t' '\n'; empty tokens skipped
//   token  := text { '[' ranges ']' text }
//   ranges := range { ',' range }
//   range  := NUM | NUM '-' NUM        width of every value = digits in the low NUM
//
// Several bracket groups expand as Slurm does: the last group varies
// fastest, then the first, second, ... up to the one before last, slowest.
// Order and duplicates are kept. Text after the last group (a suffix, as in
// `node[1-3]-ib`) is accepted as Slurm >= 23.02.5 does.
//
// distrun is stricter than scontrol 22.05 in a few places where it prints
// garbage rather than an error: a missing or stray bracket (`a[1-2`, `a]`),
// blanks or '+' inside brackets (`a[ 1]`), an open range end (`a[2-]`) and a
// number that overflows 64 bits are all rejected. See docs/hostnames.md.

// At most this many hosts in one `LO-HI` range (Slurm's MAX_RANGE).
inline constexpr size_t kMaxHostsInRange = 65536;
// At most this many hosts in a whole list: a guard against lists that would
// exhaust memory or take seconds to expand (Slurm has no such limit; no
// cluster comes near it). Checked before anything is expanded.
inline constexpr size_t kMaxHostsInList = size_t{1} << 18;

// Expands `list` into host names. Throws ConfigError for an invalid list,
// with a message that quotes the list and names the 1-based column and the
// character where it goes wrong.
std::vector<std::string> expandHostlist(std::string_view list);

// The shortest list this simple scheme finds that expands back to exactly
// `hosts`, in order: runs of neighbouring hosts that share a prefix and end
// in consecutive numbers of the same width become one bracket group.
// expandHostlist(compressHostlist(h)) == h for every h without separators
// or brackets in its names.
std::string compressHostlist(const std::vector<std::string>& hosts);

}  // namespace distrun::cluster
