// Built when distrun is configured without MPI (DISTRUN_WITH_MPI=OFF).
#include "distrun/comm/mpi/mpi_communicator.h"

#include "distrun/common/error.h"

namespace distrun::comm {

std::unique_ptr<Communicator> connectMpi(MpiThreads /*threads*/) {
  throw UsageError(std::string("backend 'mpi': ") + kBuiltWithoutMpi);
}

std::unique_ptr<Communicator> splitMpi(Communicator& /*world*/, int /*color*/) {
  throw UsageError(std::string("backend 'mpi': ") + kBuiltWithoutMpi);
}

}  // namespace distrun::comm
