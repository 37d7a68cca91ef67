#pragma once

#include "distrun/common/environment.h"

namespace distrun::train {

// By default glibc serves every block above its mmap threshold (128 KB to
// start with) from a fresh mmap and gives freed memory at the top of the
// heap back to the kernel. A training step allocates and frees the same
// large tensors (activations, their gradients, buckets) every time, so
// until glibc's own threshold has risen past them, each step pays for
// those pages again: a page fault and a kernel-zeroed page per 4 KB. The
// MNIST CNN's first epoch ran ~15% slower for it (docs/training.md).
//
// keepFreedMemoryForReuse() makes this process keep freed memory for the
// next step instead: blocks up to 32 MB (glibc's limit for the setting)
// come from the heap, and the heap is not trimmed. The resident size stays
// at the step's peak. A user who sets glibc's malloc tunables
// (GLIBC_TUNABLES with glibc.malloc.mmap_threshold or trim_threshold) keeps
// them: then nothing changes and it returns false, as it does when glibc
// refuses a setting.
bool keepFreedMemoryForReuse(const Environment& env);

}  // namespace distrun::train
