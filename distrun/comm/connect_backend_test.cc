// Which backend `auto` picks, and the backend names a build refuses.
#include <gtest/gtest.h>

#include <string>

#include "distrun/comm/connect.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/config.h"

namespace distrun::comm {
namespace {

// --backend auto: MPI where an MPI launcher spread the job over nodes
// (when built with it), Gloo everywhere else.
TEST(ResolveBackendTest, AutoIsMpiOnlyAcrossNodesUnderAnMpiLauncher) {
  const std::string acrossNodes = DISTRUN_WITH_MPI ? "mpi" : "gloo";
  EXPECT_EQ(resolveBackend(MapEnvironment{}, "auto"), "gloo");
  EXPECT_EQ(
      resolveBackend(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}},
                     "auto"),
      "gloo");
  EXPECT_EQ(resolveBackend(
                MapEnvironment{{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
                "auto"),
            "gloo");
  EXPECT_EQ(resolveBackend(
                MapEnvironment{{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
                "auto"),
            acrossNodes);
  EXPECT_EQ(resolveBackend(MapEnvironment{{"PMI_SIZE", "8"}}, "auto"), acrossNodes);
  EXPECT_EQ(resolveBackend(MapEnvironment{{"PMI_SIZE", "8"}, {"MPI_LOCALNRANKS", "8"}}, "auto"),
            "gloo");
  EXPECT_EQ(resolveBackend(MapEnvironment{{"OMPI_COMM_WORLD_SIZE", "8"}}, "gloo"), "gloo");
  EXPECT_EQ(resolveBackend(MapEnvironment{}, "mpi"), "mpi");
}

TEST(ResolveBackendTest, ANameThisBuildCannotRunIsRefusedBeforeAnythingStarts) {
  EXPECT_NO_THROW(checkBackendName("auto", "--backend"));
  EXPECT_NO_THROW(checkBackendName("gloo", "--backend"));
  try {
    checkBackendName("nccl", "--backend");
    ADD_FAILURE() << "nccl was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), DISTRUN_WITH_MPI ? "--backend 'nccl': expected auto, gloo, mpi"
                                                      : "--backend 'nccl': expected auto, gloo");
  }
  if (DISTRUN_WITH_MPI) {
    EXPECT_NO_THROW(checkBackendName("mpi", "--backend"));
  } else {
    EXPECT_THROW(checkBackendName("mpi", "--backend"), UsageError);
  }
}

}  // namespace
}  // namespace distrun::comm
