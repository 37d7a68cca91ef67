#pragma once

#include <cstddef>
#include <cstdint>

namespace distrun::comm {

// How the ranks of one node use the shared-memory engine
// (SharedMemoryCollectives, SharedMemoryMessages, SharedRegions): whether at
// all, the size of its slots, and from which sizes each of its paths is
// taken. A backend that runs its node's ranks here (the Gloo backend, alone
// or as the node's part of a hierarchy) holds one of these; readTuning
// (comm/tuning.cc) sets it from the DISTRUN_COMM_SHM* variables. Every rank
// of a node must hold the same.
struct SharedMemoryOptions {
  // Ranks of one node run their collectives through a segment they all
  // map, in pieces of at most sharedSlotBytes (SharedMemoryCollectives),
  // and send and recv through a second one (SharedMemoryMessages).
  // DISTRUN_COMM_SHM=0 turns both off. Where a rank cannot map its segment,
  // the backend's own transport serves.
  bool sharedMemory = true;
  size_t sharedSlotBytes = 4 << 20;
  // Allgather and alltoall blocks and messages of at least this many bytes
  // are read straight from the peers' buffers (process_vm_readv: one copy
  // where the slots take two) when every rank can read every other's
  // memory; DISTRUN_COMM_SHM_DIRECT_FROM overrides.
  size_t sharedDirectFromBytes = 64 << 10;
  // Allgathers whose output holds at least this many bytes go through the
  // slots and write the output with streaming stores
  // (SharedMemoryCollectives::streamOutputsFrom), past a cache they would
  // only fill. None by default: on 2 ranks of the development VM, from 16
  // MB, 1.6-2.1x Open MPI's single copy in some launches and 0.62-0.66x in
  // others, where the direct reads were level with Open MPI in every one
  // (docs/comm.md), so from sharedAllgatherChoiceFromBytes the faster of
  // the two is chosen by time; DISTRUN_COMM_SHM_STREAMING_FROM forces it.
  size_t sharedStreamingFromBytes = SIZE_MAX;
  // Allreduces of at least this many bytes go by shares
  // (SharedMemoryCollectives::reduceBySharesFrom: each rank reduces 1/n of
  // the elements, in two arrivals instead of one): on 2 ranks 1.3-1.4x
  // the one-arrival slots at 2-4 KB, 2.1x at 1 MB, 1.2-2x from 4 MB, and
  // 0.8-0.9x below 1 KB, where the second arrival costs more than the
  // reduction saves (docs/comm.md); DISTRUN_COMM_SHM_ALLREDUCE_SHARES_FROM
  // overrides.
  size_t sharedAllreduceSharesFromBytes = 2 << 10;
  // Where every rank can read every other's memory, allreduces of
  // [from, below) bytes read the peers' inputs and shares directly
  // (SharedMemoryCollectives::reduceDirectlyBetween): none by default, as
  // by shares measured 1.5-2x faster from 2 to 8 MB, where direct reads
  // were 1.2-1.4x the one-arrival slots (docs/comm.md);
  // DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_FROM and _BELOW set a band.
  size_t sharedDirectAllreduceFromBytes = 0;
  size_t sharedDirectAllreduceBelowBytes = 0;
  // Where every rank can read every other's memory, allreduces of at least
  // this many bytes (outside that band) go each by shares or with direct
  // reads, whichever rank 0 timed faster lately
  // (SharedMemoryCollectives::chooseAllreducePathFrom): on 2 ranks of the
  // development VM, by shares is twice the direct reads where one core's
  // cache hands data to another's at 9-10 GB/s and half of them where it
  // does so at 2.3, and the host switches between the two at any time
  // (docs/comm.md); DISTRUN_COMM_SHM_ALLREDUCE_CHOICE_FROM overrides.
  size_t sharedAllreduceChoiceFromBytes = 16 << 20;
  // The same for allgathers whose output holds at least this many bytes:
  // through the slots with streaming stores, or with direct reads
  // (SharedMemoryCollectives::chooseAllgatherPathFrom): there 1.6-2.1x the
  // direct reads at 9-10 GB/s cache to cache, 0.6x at 2.3 (docs/comm.md);
  // DISTRUN_COMM_SHM_ALLGATHER_CHOICE_FROM overrides.
  size_t sharedAllgatherChoiceFromBytes = 16 << 20;
  // And broadcasts of [from, below) bytes read the root's input directly
  // (SharedMemoryCollectives::broadcastDirectlyBetween): measured level
  // with Open MPI's single copy and 1.1-1.5x the slots from 64 to 256 KB,
  // level at 512 KB and 2-3x slower from 1 MB (docs/comm.md);
  // DISTRUN_COMM_SHM_DIRECT_BROADCAST_FROM and _BELOW override.
  size_t sharedDirectBroadcastFromBytes = 64 << 10;
  size_t sharedDirectBroadcastBelowBytes = 512 << 10;
  // allocateReducible's buffers are regions of a segment every rank maps,
  // reduced where they lie (SharedRegions); DISTRUN_COMM_SHM_BUFFERS=0
  // makes them ordinary memory.
  bool sharedBuffers = true;

  bool operator==(const SharedMemoryOptions&) const = default;
};

}  // namespace distrun::comm
