#include "distrun/testing/container_runtime_fixture.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "distrun/common/system.h"
#include "distrun/container/image_mount.h"
#include "distrun/container/staging_tree.h"
#include "distrun/testing/command.h"

namespace distrun::testing {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(120);  // generous: a loaded machine

// Host programs copied into the image, with the libraries ldd names; paths
// outside /usr go under /usr, which /bin, /lib and /lib64 link to.
constexpr const char* kBuildScript = R"SH(set -e
R=$1
mkdir -p "$R/usr/bin" "$R/usr/lib" "$R/usr/lib64" "$R/etc" "$R/opt" "$R/.singularity.d/env"
ln -s usr/bin "$R/bin"; ln -s usr/lib "$R/lib"; ln -s usr/lib64 "$R/lib64"
for p in dash cat ls sleep touch env true; do
  cp "/usr/bin/$p" "$R/usr/bin/"
  for lib in $(ldd "/usr/bin/$p" | grep -o '/[^ ]*'); do
    case $lib in /usr/*) dest=$R$lib;; *) dest=$R/usr$lib;; esac
    mkdir -p "$(dirname "$dest")"; cp -L "$lib" "$dest"
  done
done
ln -s dash "$R/usr/bin/sh"
echo image-only > "$R/image-marker"
echo '127.0.0.1 localhost' > "$R/etc/hosts"
echo tool > "$R/opt/tool.txt"
echo 'export FROM_ENV_SCRIPT=yes' > "$R/.singularity.d/env/90-test.sh"
mksquashfs "$R" "$2" -noappend -no-progress -quiet -all-root
)SH";

}  // namespace

std::string buildTestImage(const std::string& folder, const std::string& image) {
  std::string script = folder + ".sh";
  CommandResult written =
      runCommand("cat > " + quote(script) + " <<'EOF'\n" + std::string(kBuildScript) + "EOF\n");
  if (written.exitCode != 0) return "cannot write " + script + ": " + written.err;
  CommandResult built =
      runCommand("sh " + quote(script) + " " + quote(folder) + " " + quote(image));
  return built.exitCode == 0 ? "" : "building the test image failed: " + built.err;
}

Worker::Worker(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& extra) {
  launch::WorkerSpec spec;
  spec.argv = argv;
  std::map<std::string, std::string> vars = ProcessEnvironment().all();
  for (const auto& [name, value] : extra) vars[name] = value;
  for (const auto& [name, value] : vars) spec.environment.push_back(name + "=" + value);
  process_ = launch::spawnWorker(spec);
}

Worker::~Worker() {
  if (done_) return;
  launch::signalWorker(process_.pid, SIGKILL);
  finish();
}

// Reads what the pipes hold, waiting up to 100 ms; a pipe at EOF is closed.
void Worker::pump() {
  pollfd fds[2] = {{process_.stdoutFd.get(), POLLIN, 0}, {process_.stderrFd.get(), POLLIN, 0}};
  if (::poll(fds, 2, 100) <= 0) return;
  UniqueFd* owners[2] = {&process_.stdoutFd, &process_.stderrFd};
  std::string* sinks[2] = {&out_, &err_};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    char buffer[4096];
    ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
    if (n > 0) sinks[i]->append(buffer, static_cast<size_t>(n));
    if (n == 0) owners[i]->reset();
  }
}

std::string Worker::readLine() {
  auto deadline = Clock::now() + kPatience;
  while (out_.find('\n') == std::string::npos && process_.stdoutFd && Clock::now() < deadline) {
    pump();
  }
  size_t end = out_.find('\n');
  if (end == std::string::npos) return "";
  std::string line = out_.substr(0, end);
  out_.erase(0, end + 1);
  return line;
}

WorkerRun Worker::finish() {
  auto deadline = Clock::now() + kPatience;
  while (process_.stdoutFd || process_.stderrFd) {
    if (Clock::now() > deadline) launch::signalWorker(process_.pid, SIGKILL);
    pump();
  }
  WorkerRun run;
  ::waitpid(process_.pid, &run.status, 0);
  run.out = out_;
  run.err = err_;
  done_ = true;
  return run;
}

WorkerRun runWorker(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& extra) {
  return Worker(argv, extra).finish();
}

size_t mountCount(const std::string& folder) { return container::mountsUnder(folder).size(); }

bool waitUntilGone(pid_t pid) {
  auto deadline = Clock::now() + kPatience;
  while (!processExited(pid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

ContainerRuntimeTest::ContainerRuntimeTest() : scratch_("container-runtime") {}

void ContainerRuntimeTest::SetUp() {
  std::string missing = containerToolsMissing({"mksquashfs", "unsquashfs", "bwrap"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  image_ = scratch_.path() + "/image.sqfs";
  std::string failed = buildTestImage(scratch_.path() + "/rootfs", image_);
  ASSERT_EQ(failed, "");
  workDir_ = scratch_.path() + "/work";
  std::filesystem::create_directory(workDir_);
}

const Environment& ContainerRuntimeTest::env(const std::string& method) {
  top_ = MapEnvironment{{"TMPDIR", scratch_.path()}};
  if (!method.empty()) top_.set(container::kMountMethodVariable, method);
  env_ = std::make_unique<OverlayEnvironment>(process_, top_);
  return *env_;
}

std::unique_ptr<container::ContainerSession> ContainerRuntimeTest::open(
    const std::string& method, std::vector<container::Bind> binds) {
  container::ContainerRequest request{image_, std::move(binds), container::RuntimeChoice::kDistrun};
  return container::ContainerSession::open(request, env(method));
}

std::string ContainerRuntimeTest::cannotUse(const std::string& method) const {
  if (method == "loop" && ::geteuid() != 0) return "a kernel loop mount needs root";
  if (method == "squashfuse") return containerToolsMissing({"squashfuse", "fusermount3"});
  return "";
}

std::string ContainerRuntimeTest::containersFolder() const {
  return scratch_.path() + "/distrun-" + std::to_string(::getuid()) + "/containers";
}

}  // namespace distrun::testing
