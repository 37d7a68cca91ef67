#pragma once

// The training runtime's trace events beyond plain spans
// (docs/observability.md, "Recording a trace"). Cheap when tracing is off:
// nothing is built.
#include <cstddef>
#include <cstdint>

#include "distrun/trace/trace.h"

namespace distrun::train {

// While alive, around the launch of bucket `bucket`'s all-reduce: the
// instant "bucket_ready" (cat "ddp": bucket, bytes, step) marks the launch,
// and the all-reduce's span gets the bucket and step in its args.
class BucketTrace {
 public:
  BucketTrace(size_t bucket, int64_t bytes) : note_(args_) {
    if (!trace::enabled()) return;
    args_.add("bucket", bucket).add("step", trace::currentStep());
    trace::instant("bucket_ready", "ddp", trace::Thread::kCompute,
                   trace::Args(args_).add("bytes", bytes));
  }

 private:
  trace::Args args_;
  trace::CollectiveNote note_;
};

}  // namespace distrun::train
