// The token of the store that rank 0 hosts under `distrun exec` (MASTER_ADDR
// and MASTER_PORT, no DISTRUN_STORE): derived from the user's secret file, so
// that nobody who knows the address, the port and the world size can join
// (docs/security.md).
#include <stdlib.h>

#include <filesystem>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/comm/connect.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/common/user_secret.h"
#include "distrun/rdzv/store_client.h"

namespace distrun::comm {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::string freshConfigHome() {
  std::string pattern = ::testing::TempDir() + "/connect-token-XXXXXX";
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

MapEnvironment execEnvironment(int rank, int port, const std::string& configHome) {
  return MapEnvironment{{"RANK", std::to_string(rank)},
                        {"WORLD_SIZE", "2"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", std::to_string(port)},
                        {"XDG_CONFIG_HOME", configHome}};
}

TEST(ConnectTokenTest, RankZerosStoreWantsTheTokenOfTheUsersSecret) {
  const std::string home = freshConfigHome();
  const int port = pickFreeTcpPort();
  std::vector<std::unique_ptr<Communicator>> comms(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back(
        [&, r] { comms[static_cast<size_t>(r)] = connect(execEnvironment(r, port, home)); });
  }
  for (std::thread& t : ranks) t.join();
  const std::string token =
      derivedToken(execEnvironment(0, port, home), "exec:127.0.0.1:" + std::to_string(port) + "/2");
  rdzv::StoreClient("127.0.0.1", port, token, 30s).set("joined", "yes");
  // What anyone could compute before: a hash of the meeting point and the uid.
  EXPECT_THROW(rdzv::StoreClient("127.0.0.1", port, "0123456789abcdef", 30s), RendezvousError);
  std::filesystem::remove_all(home);
}

// Nodes that do not share the home folder derive different tokens: the
// store refuses the other rank, and says why and what to do.
TEST(ConnectTokenTest, RanksWithDifferentSecretsAreRefusedWithTheReason) {
  const std::string home0 = freshConfigHome(), home1 = freshConfigHome();
  const int port = pickFreeTcpPort();
  std::string rank0Error;
  std::thread rank0([&] {
    try {
      connect(execEnvironment(0, port, home0), ConnectOptions{.timeout = 2s});
    } catch (const Error& e) {
      rank0Error = e.what();  // it waits for rank 1, which never comes
    }
  });
  try {
    connect(execEnvironment(1, port, home1), ConnectOptions{.timeout = 30s});
    ADD_FAILURE() << "rank 1 joined with another secret";
  } catch (const RendezvousError& e) {
    EXPECT_THAT(e.what(), HasSubstr("refused this agent's token"));
    EXPECT_THAT(e.what(), HasSubstr("the user's distrun secret file, which every node must "
                                    "share; where they do not, export the same DISTRUN_TOKEN"));
  }
  rank0.join();
  EXPECT_NE(rank0Error, "");
  std::filesystem::remove_all(home0);
  std::filesystem::remove_all(home1);
}

}  // namespace
}  // namespace distrun::comm
