#pragma once

// Shared parts of container_runtime_test: a tiny real image, workers started
// the way the agent starts them, and counting mounts.
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/environment.h"
#include "distrun/container/container_session.h"
#include "distrun/launch/worker.h"
#include "distrun/testing/container_tools.h"

namespace distrun::testing {

// Builds a bare SquashFS image at `image` from the host's dash (as /bin/sh),
// cat, ls, sleep, touch, env and true with their libraries, in a merged-/usr
// layout (/bin, /lib, /lib64 are links into /usr), plus /image-marker
// ("image-only"), /etc/hosts, /opt/tool.txt, and an environment script
// /.singularity.d/env/90-test.sh exporting FROM_ENV_SCRIPT=yes. Returns ""
// or what failed.
std::string buildTestImage(const std::string& folder, const std::string& image);

// What a finished worker left.
struct WorkerRun {
  int status = 0;  // wait status
  std::string out;
  std::string err;
};

// A worker started as the agent starts one (launch::spawnWorker: its own
// process group, output in pipes), with this process's environment plus
// `extra`.
class Worker {
 public:
  explicit Worker(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& extra = {});
  ~Worker();
  pid_t pid() const { return process_.pid; }
  // Reads standard output until it holds a whole line; "" at EOF or after
  // the generous timeout.
  std::string readLine();
  // Collects the rest of the output and waits for the worker.
  WorkerRun finish();

 private:
  void pump();

  launch::WorkerProcess process_;
  std::string out_;
  std::string err_;
  bool done_ = false;
};

// Runs `argv` as a worker to its end.
WorkerRun runWorker(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& extra = {});

// The mounts at or under `folder` in this process's mount table.
size_t mountCount(const std::string& folder);

// Waits up to a generous timeout for `pid` to be gone (or a zombie).
bool waitUntilGone(pid_t pid);

// A scratch TMPDIR (where node mounts go) and a test image in it, skipped
// with the reason when a container tool is missing. Without a method named,
// open() takes the first that works (as root the kernel's loop mount; a
// user without /dev/fuse unpacks).
class ContainerRuntimeTest : public ::testing::Test {
 protected:
  ContainerRuntimeTest();
  void SetUp() override;
  // The environment open() gets: this process's, with TMPDIR the scratch
  // folder and DISTRUN_CONTAINER_MOUNT `method` when not empty.
  const Environment& env(const std::string& method = "");
  std::unique_ptr<container::ContainerSession> open(const std::string& method = "",
                                                    std::vector<container::Bind> binds = {});
  std::string containersFolder() const;
  // Why `method` cannot be used here ("" when it can): for GTEST_SKIP.
  std::string cannotUse(const std::string& method) const;

  ScratchDir scratch_;
  std::string image_;
  std::string workDir_;

 private:
  ProcessEnvironment process_;
  MapEnvironment top_;
  std::unique_ptr<OverlayEnvironment> env_;
};

}  // namespace distrun::testing
