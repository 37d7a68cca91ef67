// A bare MPI_Allreduce loop, the peer `distrun bench --backend mpi` is held
// to: in-place float sum, WARMUP untimed then ITERS timed calls per size;
// rank 0 prints "bytes,time_us" with the slowest rank's mean.
//   mpirun -np 2 mpi_allreduce_bench [ITERS WARMUP] SIZE...
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int iters = std::atoi(argv[1]);
  const int warmup = std::atoi(argv[2]);
  for (int a = 3; a < argc; ++a) {
    const long bytes = std::atol(argv[a]);
    std::vector<float> data(static_cast<size_t>(bytes / 4), 1.0f);
    const int count = static_cast<int>(data.size());
    for (int i = 0; i < warmup; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double us = (MPI_Wtime() - start) / iters * 1e6;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%ld,%.3f\n", bytes, us);
  }
  MPI_Finalize();
  return 0;
}
