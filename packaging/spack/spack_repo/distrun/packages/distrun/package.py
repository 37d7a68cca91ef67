# Spack recipe for distrun (docs/install.md). With this folder's repository
# added (`spack repo add packaging/spack/spack_repo/distrun`): `spack install distrun`, or
# `spack install distrun~train` for the launcher without LibTorch.
# bench/spack-check.sh installs and tests it with the real Spack, offline;
# scripts/check-recipes checks it against the project in CI.

from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *


class Distrun(CMakePackage):
    """Launcher, collectives and LibTorch DDP runtime for data-parallel
    deep-learning training on one machine or a Slurm cluster."""

    homepage = "https://github.com/distrun/distrun"
    git = "https://github.com/distrun/distrun.git"

    license("BSD-3-Clause")

    version("main", branch="main")

    variant("mpi", default=True, description="Build the MPI backend of the collectives")
    variant(
        "train",
        default=True,
        description="Build the LibTorch training runtime (distrun-train, the C++ DDP library)",
    )
    variant(
        "nccl",
        default=False,
        description="Build the nccl and rccl backends and --device cuda (NCCL is loaded at run time)",
    )

    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("help2man", type="build")  # the man pages, from --help

    depends_on("cli11")
    depends_on("fmt")
    depends_on("gloo")
    depends_on("hwloc")
    depends_on("nlohmann-json@3:")
    depends_on("zlib-api")
    depends_on("mpi", when="+mpi")
    # LibTorch: py-torch puts its CMake package (share/cmake/Torch) on the
    # CMake prefix path of its dependents.
    depends_on("py-torch", when="+train")
    # Headers only: libnccl and libcudart are opened at run time.
    depends_on("cuda", when="+nccl")
    depends_on("nccl", when="+nccl")
    depends_on("googletest", type="test")

    def cmake_args(self):
        return [
            self.define("DISTRUN_MPI", "ON" if self.spec.satisfies("+mpi") else "OFF"),
            self.define_from_variant("DISTRUN_TRAIN", "train"),
            self.define("DISTRUN_NCCL", "ON" if self.spec.satisfies("+nccl") else "OFF"),
            self.define("DISTRUN_BUILD_TESTS", self.run_tests),
            self.define("DISTRUN_BUILD_BENCH", False),
        ]

    def test_version(self):
        """distrun --version names the backends this build has"""
        distrun = which(self.prefix.bin.distrun)
        out = distrun("--version", output=str.split, error=str.split)
        assert "backends: gloo" in out
        if self.spec.satisfies("+mpi"):
            assert "gloo, mpi" in out

    def test_hostnames(self):
        """distrun hostnames expands a Slurm hostlist"""
        distrun = which(self.prefix.bin.distrun)
        out = distrun("hostnames", "n[1-3]", output=str.split, error=str.split)
        assert out.split() == ["n1", "n2", "n3"]

    def test_bench_pi(self):
        """distrun bench pi: the ranks of one node talk"""
        distrun = which(self.prefix.bin.distrun)
        distrun("bench", "pi")

    def test_train(self):
        """distrun train: two ranks train the linear workload"""
        if not self.spec.satisfies("+train"):
            raise SkipTest("distrun~train has no training runtime")
        distrun = which(self.prefix.bin.distrun)
        distrun("train", "--nproc-per-node", "2", "linear", "--epochs", "2")
