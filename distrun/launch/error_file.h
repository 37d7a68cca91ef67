#pragma once

#include <optional>
#include <string>
#include <vector>

namespace distrun::launch {

// What a worker's `torch.distributed.elastic.multiprocessing.errors.record`
// (PyTorch's @record) wrote to its TORCHELASTIC_ERROR_FILE when an
// exception ended it: {"message": {"message": "RuntimeError: ...",
// "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1764640000"}}},
// or the flat {"message": "...", "timestamp": N} that C++ writers use.
struct RecordedError {
  std::string message;                 // the exception's own words, "RuntimeError: boom"
  std::vector<std::string> traceback;  // py_callstack, one line each
  long long timestamp = 0;             // seconds since the epoch; 0: not given
  long long writtenMs = 0;             // the file's last write (mtime), ms since the epoch
};

// nullopt when the file is absent, empty or not such a record (a worker
// killed while writing it): the stderr tail then stands alone.
std::optional<RecordedError> readErrorFile(const std::string& path);

}  // namespace distrun::launch
