#include "distrun/container/sif.h"

#include <sys/stat.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/container/image_file.h"
#include "distrun/container/test_images.h"

namespace distrun::container {
namespace {

using test::littleEndian;
using ::testing::HasSubstr;

// Byte offsets of the format (sif.go's header, descriptor.go's
// rawDescriptor), written out here rather than taken from sif.cc so the
// test checks the layout, not the code against itself.
constexpr uint64_t kArchAt = 45;
constexpr uint64_t kIdAt = 48;
constexpr uint64_t kExtraAt = test::kSifTable + 201;
constexpr int64_t kTime = 1700000000;

class Sif : public ::testing::Test {
 protected:
  void SetUp() override {
    squashfs_ = folder_.path("root.squashfs");
    sif_ = folder_.path("image.sif");
    test::writeBytes(squashfs_, test::fakeSquashfs(10000));
  }
  void write(const std::string& arch = "amd64") {
    SifOptions options;
    options.arch = arch;
    options.createdAt = kTime;
    writeSif(squashfs_, sif_, options);
  }
  std::string bytesAt(uint64_t offset, size_t length) {
    return test::readBytes(sif_).substr(offset, length);
  }

  test::TempFolder folder_;
  std::string squashfs_;
  std::string sif_;
};

TEST_F(Sif, WritesTheHeaderAsTheFormatLaysItOut) {
  write("arm64");
  EXPECT_EQ(bytesAt(0, 32), std::string("#!/usr/bin/env run-singularity\n\0", 32));
  EXPECT_EQ(bytesAt(32, 10), std::string("SIF_MAGIC\0", 10));
  EXPECT_EQ(bytesAt(42, 3), std::string("01\0", 3));
  EXPECT_EQ(bytesAt(kArchAt, 3), std::string("04\0", 3));                   // arch.go: arm64
  EXPECT_EQ(static_cast<unsigned char>(bytesAt(kIdAt + 6, 1)[0]) >> 4, 4);  // UUID version 4
  EXPECT_EQ(static_cast<unsigned char>(bytesAt(kIdAt + 8, 1)[0]) >> 6, 2);  // RFC 4122 variant
  std::string fields = littleEndian(kTime, 8) + littleEndian(kTime, 8) + littleEndian(47, 8) +
                       littleEndian(48, 8) + littleEndian(4096, 8) + littleEndian(48 * 585, 8) +
                       littleEndian(4096 + 48 * 585, 8) +
                       littleEndian(test::kSifData - (4096 + 48 * 585) + 10000, 8);
  EXPECT_EQ(bytesAt(64, 64), fields);
}

TEST_F(Sif, WritesOnePrimarySystemPartitionAlignedTo4096) {
  write();
  std::string descriptor =
      littleEndian(0x4004, 4) + '\1' + littleEndian(1, 4) + littleEndian(0xf0000001, 4) +
      littleEndian(0, 4) + littleEndian(test::kSifData, 8) + littleEndian(10000, 8) +
      littleEndian(test::kSifData - (4096 + 48 * 585) + 10000, 8) + littleEndian(kTime, 8) +
      littleEndian(kTime, 8) + std::string(16, '\0') + std::string(128, '\0');
  EXPECT_EQ(bytesAt(test::kSifTable, 201), descriptor);
  EXPECT_EQ(bytesAt(kExtraAt, 11), littleEndian(1, 4) + littleEndian(2, 4) + "02" + '\0');
  EXPECT_EQ(bytesAt(kExtraAt + 11, 384 - 11), std::string(384 - 11, '\0'));
  EXPECT_EQ(bytesAt(test::kSifTable + 585, 47 * 585), std::string(47 * 585, '\0'));  // 47 free
  EXPECT_EQ(bytesAt(test::kSifData, 10000), test::readBytes(squashfs_));
  EXPECT_EQ(test::readBytes(sif_).size(), test::kSifData + 10000);
}

TEST_F(Sif, ReadsBackWhatItWrote) {
  write();
  SifFile sif = readSif(sif_);
  EXPECT_EQ(sif.header.launchScript, "#!/usr/bin/env run-singularity\n");
  EXPECT_EQ(sif.header.magic, "SIF_MAGIC");
  EXPECT_EQ(sif.header.version, "01");
  EXPECT_EQ(sif.header.arch, "amd64");
  EXPECT_THAT(sif.header.id, ::testing::MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                                                     "[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_EQ(sif.header.createdAt, kTime);
  EXPECT_EQ(sif.header.descriptorsTotal, 48);
  EXPECT_EQ(sif.header.descriptorsFree, 47);
  EXPECT_EQ(sif.header.dataOffset, 4096 + 48 * 585);
  ASSERT_EQ(sif.descriptors.size(), 1U);
  const SifDescriptor& d = sif.descriptors[0];
  EXPECT_EQ(d.dataType, 0x4004);
  EXPECT_EQ(d.id, 1U);
  EXPECT_EQ(d.groupId, 1U);
  EXPECT_EQ(d.offset, 32768);
  EXPECT_EQ(d.size, 10000);
  EXPECT_EQ(d.fsType, 1);
  EXPECT_EQ(d.partitionType, 2);
  EXPECT_EQ(d.arch, "amd64");
  EXPECT_EQ(d.name, "");
}

TEST_F(Sif, CopiesAFileSystemLargerThanOneChunkWhole) {
  std::string big = test::fakeSquashfs(9 << 20);  // copied 4 MiB at a time
  big[5 << 20] = 'X';
  test::writeBytes(squashfs_, big);
  write();
  EXPECT_EQ(test::readBytes(sif_).substr(test::kSifData), big);
  EXPECT_EQ(readSif(sif_).descriptors.at(0).size, 9 << 20);
}

TEST_F(Sif, EachImageGetsItsOwnIdAndIsExecutable) {
  write();
  std::string first = readSif(sif_).header.id;
  write();
  EXPECT_NE(readSif(sif_).header.id, first);
  struct stat st {};
  ASSERT_EQ(::stat(sif_.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
}

TEST_F(Sif, CreatedAtDefaultsToNow) {
  writeSif(squashfs_, sif_, SifOptions{});
  EXPECT_GT(readSif(sif_).header.createdAt, kTime);
}

TEST_F(Sif, AnArchitectureGoDoesNotNameIsAUsageError) {
  Error e = test::thrownBy([&] { write("x86_64"); });
  EXPECT_EQ(e.exitCode(), ExitCode::kUsage);
  EXPECT_EQ(std::string(e.what()),
            "SIF architecture 'x86_64': expected one of Go's GOARCH names 386, amd64, arm, arm64, "
            "ppc64, ppc64le, mips, mipsle, mips64, mips64le, s390x, riscv64");
  EXPECT_FALSE(std::filesystem::exists(sif_));  // refused before anything was written
}

TEST_F(Sif, AMissingSquashfsIsAnIoErrorNamingIt) {
  squashfs_ = folder_.path("missing.squashfs");
  Error e = test::thrownBy([&] { write(); });
  EXPECT_EQ(e.exitCode(), ExitCode::kIo);
  EXPECT_EQ(std::string(e.what()),
            "SquashFS file " + squashfs_ + ": cannot open: No such file or directory");
}

TEST_F(Sif, AnInputThatIsNotSquashfsIsADataError) {
  test::writeBytes(squashfs_, "#!/bin/sh\n");
  Error e = test::thrownBy([&] { write(); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "writing SIF file " + sif_ + ": " + squashfs_ +
                                       " is not a SquashFS file system (no hsqs superblock): "
                                       "make it with mksquashfs");
}

TEST_F(Sif, AnOutputThatCannotBeCreatedIsAnIoErrorNamingIt) {
  sif_ = folder_.path("no/such/image.sif");
  Error e = test::thrownBy([&] { write(); });
  EXPECT_EQ(e.exitCode(), ExitCode::kIo);
  EXPECT_EQ(std::string(e.what()),
            "writing SIF file " + sif_ + ": cannot create it: No such file or directory");
}

TEST_F(Sif, AFullDiskIsAnIoErrorNamingTheOutput) {
  sif_ = "/dev/full";
  Error e = test::thrownBy([&] { write(); });
  EXPECT_EQ(e.exitCode(), ExitCode::kIo);
  EXPECT_EQ(std::string(e.what()),
            "writing SIF file /dev/full: cannot write: No space left on device");
}

// readSif's own checks; openImage's are in image_file_test.cc.
TEST_F(Sif, ReadingAFileWithoutTheMagicSaysItIsNotSif) {
  Error e = test::thrownBy([&] { readSif(squashfs_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + squashfs_ +
                                       ": not a SIF file (no SIF_MAGIC at byte 32): give a .sif "
                                       "file or a SquashFS file system (distrun wrap makes both)");
}

TEST_F(Sif, ReadingAMissingFileIsNoInput) {
  Error e = test::thrownBy([&] { readSif(folder_.path("gone.sif")); });
  EXPECT_EQ(e.exitCode(), ExitCode::kNoInput);
  EXPECT_EQ(std::string(e.what()), "container image " + folder_.path("gone.sif") +
                                       ": cannot open: No such file or directory");
}

TEST_F(Sif, AHeaderCutShortIsTruncated) {
  write();
  test::truncateFile(sif_, 100);
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + sif_ +
                                       ": truncated: the SIF header needs 128 bytes, the file "
                                       "holds 100: copy or build it again");
}

TEST_F(Sif, AnotherFormatVersionIsRefused) {
  write();
  test::patchBytes(sif_, 42, "02");
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_THAT(e.what(), HasSubstr(": SIF format version '02', distrun reads version 01 "));
}

TEST_F(Sif, AHeaderWhoseTableCannotHoldItsDescriptorsIsCorrupt) {
  write();
  test::patchBytes(sif_, 104, littleEndian(585, 8));  // descriptorsSize: room for one of 48
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + sif_ +
                                       ": corrupt: its SIF header lists 48 descriptors (47 free) "
                                       "in 585 bytes at byte 4096 (each takes 585): build the "
                                       "image again");
}

TEST_F(Sif, ADescriptorTableCutShortIsTruncated) {
  write();
  test::truncateFile(sif_, 5000);
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + sif_ +
                                       ": truncated: its SIF descriptor table ends at byte "
                                       "32176, the file holds 5000: copy or build it again");
}

TEST_F(Sif, AnObjectCutShortIsTruncated) {
  write();
  test::truncateFile(sif_, test::kSifData + 100);
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + sif_ +
                                       ": truncated: its SIF object 1 is 10000 bytes at byte "
                                       "32768, the file holds 32868: copy or build it again");
}

TEST_F(Sif, ANegativeObjectSizeIsCorrupt) {
  write();
  test::patchBytes(sif_, test::kSifTable + 25, littleEndian(static_cast<uint64_t>(-5), 8));
  Error e = test::thrownBy([&] { readSif(sif_); });
  EXPECT_EQ(e.exitCode(), ExitCode::kData);
  EXPECT_EQ(std::string(e.what()), "container image " + sif_ +
                                       ": corrupt: its SIF object 1 is -5 bytes at byte 32768: "
                                       "build the image again");
}

TEST_F(Sif, ArchitectureCodesArchGoDoesNotListReadAsUnknown) {
  write();
  test::patchBytes(sif_, kExtraAt + 8, "99");
  test::patchBytes(sif_, kArchAt, "99");
  SifFile sif = readSif(sif_);
  EXPECT_EQ(sif.header.arch, "unknown");
  ASSERT_EQ(sif.descriptors.size(), 1U);
  EXPECT_EQ(sif.descriptors[0].arch, "unknown");
}

}  // namespace
}  // namespace distrun::container
