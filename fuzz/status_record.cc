// Fuzzes the status records a worker writes on its progress pipe
// (distrun/common/status_record.h): any bytes fed to the agent's reader in
// any split give a latest record, if any, that formats and parses back to
// itself, and whose words for the status line can be made.
#include <string>

#include "distrun/common/status_record.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = distrun::fuzz::asText(data, size);
  distrun::StatusRecordReader whole;
  distrun::StatusRecordReader split;
  whole.feed(bytes);
  for (size_t at = 0; at < bytes.size(); at += 7) split.feed(bytes.substr(at, 7));
  distrun::fuzz::check(whole.latest() == split.latest(), "the split changed the record read");
  const std::optional<distrun::StatusRecord>& record = whole.latest();
  if (!record) return 0;
  std::string line = distrun::formatStatusRecord(*record);
  distrun::fuzz::check(!line.empty() && line.back() == '\n', "a record's line ends in a newline");
  line.pop_back();
  const std::optional<distrun::StatusRecord> again = distrun::parseStatusRecord(line);
  distrun::fuzz::check(again.has_value(), "a formatted record parses");
  distrun::fuzz::check(distrun::formatStatusRecord(*again) == line + "\n",
                       "a formatted record parses back to the same line");
  (void)distrun::describeStatus(*record);
  return 0;
}
