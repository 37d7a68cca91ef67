#include "distrun/trace_merge/clock_alignment.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "distrun/common/strings.h"

namespace distrun::trace_merge {

namespace {

// The clock everything is placed on.
struct Reference {
  const ClockSource* source = nullptr;  // null: the real-time clock itself
  bool rankZero = false;
};

bool isWorker(const ClockSource& s) { return s.kind == SourceKind::kWorker; }

Reference findReference(const std::vector<ClockSource>& sources) {
  for (const ClockSource& s : sources) {
    if (isWorker(s) && s.rank == 0 && s.pair) return {&s, true};
  }
  const ClockSource* agent = nullptr;
  for (const ClockSource& s : sources) {
    if (s.kind == SourceKind::kAgent && s.pair && (!agent || s.nodeRank < agent->nodeRank)) {
      agent = &s;
    }
  }
  if (agent) return {agent, false};
  for (const ClockSource& s : sources) {
    if (s.kind == SourceKind::kTorch && s.rank == 0 && s.pair) return {&s, false};
  }
  return {};
}

// What is known of each host's CLOCK_MONOTONIC against the reference.
class HostClocks {
 public:
  HostClocks(const std::vector<ClockSource>& sources, const Reference& ref);
  const double* shiftOf(const std::string& host) const;
  const std::string& howOf(const std::string& host) const { return how_.at(host); }
  // Rank 0's shift in `round`, when its host's clock is known.
  const double* rankZeroShift(int round) const;

 private:
  bool learnFrom(const ClockSource& s);

  std::map<std::string, double> shift_;
  std::map<std::string, std::string> how_;
  std::map<int, std::string> rankZeroHost_;  // by round
};

HostClocks::HostClocks(const std::vector<ClockSource>& sources, const Reference& ref) {
  if (!ref.source) return;
  if (!ref.source->host.empty()) {
    shift_[ref.source->host] = 0;
    how_[ref.source->host] = ref.source->label + "'s host: the reference";
  }
  if (!ref.rankZero) return;  // offsets were measured to a rank 0 that is not here
  for (const ClockSource& s : sources) {
    if (isWorker(s) && s.rank == 0) rankZeroHost_.try_emplace(s.round, s.host);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const ClockSource& s : sources) changed = learnFrom(s) || changed;
  }
}

bool HostClocks::learnFrom(const ClockSource& s) {
  if (!isWorker(s) || !s.measured || s.host.empty() || shift_.contains(s.host)) return false;
  const double* zero = rankZeroShift(s.round);
  if (!zero) return false;
  shift_[s.host] = *zero + s.measured->offsetUs;
  how_[s.host] = s.label + "'s measured offset";
  return true;
}

const double* HostClocks::shiftOf(const std::string& host) const {
  auto it = shift_.find(host);
  return host.empty() || it == shift_.end() ? nullptr : &it->second;
}

const double* HostClocks::rankZeroShift(int round) const {
  auto host = rankZeroHost_.find(round);
  return host == rankZeroHost_.end() ? nullptr : shiftOf(host->second);
}

Placement byRealtime(const ClockSource& s, const Reference& ref) {
  double shift = s.pair->realtimeUs - s.pair->monotonicUs;
  if (ref.source) shift -= ref.source->pair->realtimeUs - ref.source->pair->monotonicUs;
  const std::string host = s.host.empty() ? "its host" : s.host;
  return {shift, true, true,
          fmt::format("the real-time clock of {} (no offset was measured there)", host)};
}

Placement place(const ClockSource& s, const HostClocks& hosts, const Reference& ref) {
  if (&s == ref.source) return {0, true, false, "the reference clock"};
  const double* zero = isWorker(s) && s.measured ? hosts.rankZeroShift(s.round) : nullptr;
  if (zero) {
    return {*zero + s.measured->offsetUs, true, false,
            fmt::format("its measured offset {:.3f} us to rank 0 (round trip {:.3f} us)",
                        s.measured->offsetUs, s.measured->rttUs)};
  }
  if (const double* shift = hosts.shiftOf(s.host)) {
    return {*shift, true, false,
            fmt::format("the clock of its host {} ({})", s.host, hosts.howOf(s.host))};
  }
  if (s.pair) return byRealtime(s, ref);
  return {};
}

void addNotes(const std::vector<ClockSource>& sources, const std::vector<Placement>& placed,
              const Reference& ref, std::vector<std::string>& notes) {
  const bool workers = std::any_of(sources.begin(), sources.end(), isWorker);
  if (!ref.source && !sources.empty()) {
    notes.push_back(
        "no rank 0 trace, launcher trace or clocked PyTorch export of rank 0 to "
        "align to: every process placed by real time");
  } else if (!ref.rankZero && workers) {
    notes.push_back(
        fmt::format("no rank 0 trace (rank0.jsonl): aligned to {}'s clock, measured offsets unused",
                    ref.source->label));
  }
  std::vector<std::string> byRealtime;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (placed[i].realtime) byRealtime.push_back(sources[i].label);
  }
  if (byRealtime.empty()) return;
  notes.push_back(fmt::format(
      "placed by their hosts' real-time clocks (no clock offset was measured for them): {}",
      join(byRealtime, ", ")));
}

}  // namespace

std::vector<Placement> alignClocks(const std::vector<ClockSource>& sources,
                                   std::vector<std::string>& notes) {
  const Reference ref = findReference(sources);
  const HostClocks hosts(sources, ref);
  std::vector<Placement> placed;
  placed.reserve(sources.size());
  for (const ClockSource& s : sources) placed.push_back(place(s, hosts, ref));
  addNotes(sources, placed, ref, notes);
  return placed;
}

}  // namespace distrun::trace_merge
