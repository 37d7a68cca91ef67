// A bare Open MPI loop of one collective, the peer `distrun bench` is held
// to: floats, WARMUP untimed then ITERS timed calls per size; rank 0 prints
// "bytes,time_us" with the slowest rank's mean. Sizes follow nccl-tests,
// as `distrun bench` does: the whole array of every rank's block for
// all_gather, reduce_scatter and alltoall; sendrecv shifts SIZE bytes
// round the ring of ranks. all_reduce runs in place (the form DDP uses),
// broadcast on its one buffer, the others out of place.
//   mpirun -np 2 mpi_collective_bench COLLECTIVE ITERS WARMUP SIZE...
// COLLECTIVE: all_reduce, broadcast, all_gather, reduce_scatter, alltoall or
// sendrecv. MPI_Init by default; BENCH_MPI_THREADS=funneled or serialized
// asks MPI_Init_thread for that level instead (as distrun's MPI backend
// does, DISTRUN_COMM_MPI_THREADS).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

// One call of `collective` on `size`-byte arrays, or an empty function
// for a name that is none.
std::function<void()> collectiveCall(const char* collective, long bytes, int ranks,
                                     std::vector<float>& a, std::vector<float>& b) {
  const auto whole = static_cast<size_t>(bytes / 4);
  const int block = static_cast<int>(whole / static_cast<size_t>(ranks));
  const bool blocked =
      std::strcmp(collective, "all_reduce") != 0 && std::strcmp(collective, "broadcast") != 0;
  a.assign(
      blocked && std::strcmp(collective, "all_gather") == 0 ? static_cast<size_t>(block) : whole,
      1.0f);
  b.assign(whole, 0.0f);
  const int count = static_cast<int>(whole);
  if (std::strcmp(collective, "all_reduce") == 0) {
    return [&a, count] {
      MPI_Allreduce(MPI_IN_PLACE, a.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
  }
  if (std::strcmp(collective, "broadcast") == 0) {
    return [&a, count] { MPI_Bcast(a.data(), count, MPI_FLOAT, 0, MPI_COMM_WORLD); };
  }
  if (std::strcmp(collective, "all_gather") == 0) {
    return [&a, &b, block] {
      MPI_Allgather(a.data(), block, MPI_FLOAT, b.data(), block, MPI_FLOAT, MPI_COMM_WORLD);
    };
  }
  if (std::strcmp(collective, "reduce_scatter") == 0) {
    return [&a, &b, block] {
      MPI_Reduce_scatter_block(a.data(), b.data(), block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
  }
  if (std::strcmp(collective, "sendrecv") == 0) {  // a ring shift of the whole array
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int next = (rank + 1) % ranks;
    const int previous = (rank + ranks - 1) % ranks;
    return [&a, &b, count, next, previous] {
      MPI_Sendrecv(a.data(), count, MPI_FLOAT, next, 0, b.data(), count, MPI_FLOAT, previous, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    };
  }
  if (std::strcmp(collective, "alltoall") == 0) {
    return [&a, &b, block] {
      MPI_Alltoall(a.data(), block, MPI_FLOAT, b.data(), block, MPI_FLOAT, MPI_COMM_WORLD);
    };
  }
  return {};
}

// MPI_Init, or MPI_Init_thread at the level BENCH_MPI_THREADS names.
void initialise(int& argc, char**& argv) {
  const char* level = std::getenv("BENCH_MPI_THREADS");
  if (level == nullptr || std::strcmp(level, "single") == 0) {
    MPI_Init(&argc, &argv);
    return;
  }
  const bool serialized = std::strcmp(level, "serialized") == 0;
  if (!serialized && std::strcmp(level, "funneled") != 0) {
    std::fprintf(stderr,
                 "mpi_collective_bench: BENCH_MPI_THREADS '%s': expected single, "
                 "funneled or serialized\n",
                 level);
    std::exit(64);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_FUNNELED,
                  &provided);
}

}  // namespace

int main(int argc, char** argv) {
  initialise(argc, argv);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc < 4) {
    if (rank == 0)
      std::fprintf(stderr, "usage: mpi_collective_bench COLLECTIVE ITERS WARMUP SIZE...\n");
    MPI_Finalize();
    return 64;
  }
  const char* collective = argv[1];
  const int iters = std::atoi(argv[2]);
  const int warmup = std::atoi(argv[3]);
  std::vector<float> a;
  std::vector<float> b;
  for (int arg = 4; arg < argc; ++arg) {
    const long bytes = std::atol(argv[arg]);
    const std::function<void()> call = collectiveCall(collective, bytes, ranks, a, b);
    if (!call) {
      if (rank == 0) std::fprintf(stderr, "mpi_collective_bench: no collective %s\n", collective);
      MPI_Finalize();
      return 64;
    }
    for (int i = 0; i < warmup; ++i) call();
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call();
    double us = (MPI_Wtime() - start) / iters * 1e6;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%ld,%.3f\n", bytes, us);
  }
  MPI_Finalize();
  return 0;
}
