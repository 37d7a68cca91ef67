#include "distrun/container/image_file.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/container/sif.h"
#include "distrun/container/test_images.h"

namespace distrun::container {
namespace {

using test::littleEndian;

class OpenImage : public ::testing::Test {
 protected:
  void SetUp() override {
    squashfs_ = folder_.path("root.squashfs");
    sif_ = folder_.path("image.sif");
    test::writeBytes(squashfs_, test::fakeSquashfs(8192, 5000));
    writeSif(squashfs_, sif_, SifOptions{});
  }
  // openImage's error for `path`: its exit code and its message after
  // "container image PATH: ".
  std::pair<ExitCode, std::string> failure(const std::string& path) {
    Error e = test::thrownBy([&] { openImage(path); });
    std::string what = e.what();
    std::string prefix = "container image " + path + ": ";
    EXPECT_EQ(what.rfind(prefix, 0), 0U) << what;
    return {e.exitCode(), what.substr(std::min(prefix.size(), what.size()))};
  }
  std::pair<ExitCode, std::string> data(const std::string& message) {
    return {ExitCode::kData, message};
  }

  test::TempFolder folder_;
  std::string squashfs_;
  std::string sif_;
};

TEST_F(OpenImage, FindsTheSquashfsOfABareImage) {
  ImageFile image = openImage(squashfs_);
  EXPECT_EQ(image.path, squashfs_);
  EXPECT_EQ(image.format, ImageFormat::kSquashfs);
  EXPECT_EQ(image.rootOffset, 0U);
  EXPECT_EQ(image.rootSize, 5000U);  // bytes_used, not the file's padded size
  EXPECT_EQ(image.arch, "");
  EXPECT_EQ(formatName(image.format), "SquashFS");
}

TEST_F(OpenImage, FindsTheSystemPartitionOfASif) {
  ImageFile image = openImage(sif_);
  EXPECT_EQ(image.format, ImageFormat::kSif);
  EXPECT_EQ(image.rootOffset, test::kSifData);
  EXPECT_EQ(image.rootSize, 5000U);
  EXPECT_EQ(image.arch, "amd64");
  EXPECT_EQ(formatName(image.format), "SIF");
}

TEST_F(OpenImage, MakesARelativePathAbsolute) {
  std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(folder_.path(""));
  ImageFile image = openImage("./image.sif");
  std::filesystem::current_path(here);
  EXPECT_EQ(image.path, sif_);
}

TEST_F(OpenImage, TheIdentityStaysForTheSameFileAndChangesWithIt) {
  std::string identity = openImage(sif_).identity;
  EXPECT_EQ(openImage(sif_).identity, identity);
  writeSif(squashfs_, sif_ + ".new", SifOptions{});
  std::filesystem::rename(sif_ + ".new", sif_);
  EXPECT_NE(openImage(sif_).identity, identity);
}

TEST_F(OpenImage, AMissingFileIsNoInput) {
  std::string gone = folder_.path("gone.sif");
  EXPECT_EQ(failure(gone), std::make_pair(ExitCode::kNoInput,
                                          std::string("cannot open: No such file or directory: "
                                                      "give the path of a .sif or SquashFS file "
                                                      "(distrun wrap makes one)")));
}

TEST_F(OpenImage, AFolderIsNotAnImage) {
  EXPECT_EQ(failure(folder_.path("")), data("not a regular file: give a .sif or SquashFS file"));
}

TEST_F(OpenImage, AnEmptyFileSaysSo) {
  test::writeBytes(sif_, "");
  EXPECT_EQ(failure(sif_), data("the file is empty: an interrupted copy or build? Build it "
                                "again with distrun wrap"));
}

TEST_F(OpenImage, AFileOfNeitherFormatSaysSo) {
  test::writeBytes(sif_, "#!/bin/sh\necho this is not an image, but long enough to be one\n");
  EXPECT_EQ(failure(sif_), data("neither a SIF file nor a SquashFS file system (no SIF_MAGIC, "
                                "no hsqs superblock): build one with distrun wrap"));
}

TEST_F(OpenImage, ASquashfsCutShortIsTruncated) {
  test::truncateFile(squashfs_, 4000);
  EXPECT_EQ(failure(squashfs_), data("truncated: its SquashFS file system needs 5000 bytes, the "
                                     "file holds 4000: copy or build it again"));
}

TEST_F(OpenImage, ASquashfsSuperblockCutShortIsTruncated) {
  test::truncateFile(squashfs_, 50);
  EXPECT_EQ(failure(squashfs_), data("truncated: its SquashFS superblock needs 96 bytes, the "
                                     "file holds 50: copy or build it again"));
}

TEST_F(OpenImage, AnOldSquashfsVersionIsRefused) {
  test::writeBytes(squashfs_, test::fakeSquashfs(8192, 0, 3));
  EXPECT_EQ(failure(squashfs_), data("SquashFS version 3.0, expected 4.0 (what mksquashfs and "
                                     "the kernel have made since 2009): build the image again"));
}

TEST_F(OpenImage, ASquashfsSmallerThanItsSuperblockIsCorrupt) {
  test::writeBytes(squashfs_, test::fakeSquashfs(8192, 10));
  EXPECT_EQ(failure(squashfs_), data("corrupt: its SquashFS superblock says the file system is "
                                     "10 bytes: build the image again"));
}

TEST_F(OpenImage, ASifCutInItsDescriptorTableIsTruncated) {
  test::truncateFile(sif_, 10000);
  EXPECT_EQ(failure(sif_), data("truncated: its SIF descriptor table ends at byte 32176, the "
                                "file holds 10000: copy or build it again"));
}

TEST_F(OpenImage, ASifCutInItsPartitionIsTruncated) {
  test::truncateFile(sif_, test::kSifData + 4000);
  EXPECT_EQ(failure(sif_), data("truncated: its SIF object 1 is 8192 bytes at byte 32768, the "
                                "file holds 36768: copy or build it again"));
}

TEST_F(OpenImage, ASifWhosePartitionIsNotSquashfsIsRefused) {
  test::patchBytes(sif_, test::kSifTable + 201, littleEndian(2, 4));  // FsExt3
  EXPECT_EQ(failure(sif_), data("its system partition is not SquashFS (file system type 2): "
                                "distrun runs SquashFS images only"));
}

TEST_F(OpenImage, ASifWithoutASystemPartitionIsRefused) {
  test::patchBytes(sif_, test::kSifTable + 205, littleEndian(3, 4));  // PartData
  EXPECT_EQ(failure(sif_), data("a SIF file without a primary system partition (nothing to "
                                "run): build it with distrun wrap or apptainer build"));
}

TEST_F(OpenImage, ASifWithNoObjectAtAllIsRefusedTheSameWay) {
  test::patchBytes(sif_, test::kSifTable + 4, std::string(1, '\0'));  // the descriptor is unused
  EXPECT_EQ(failure(sif_), data("a SIF file without a primary system partition (nothing to "
                                "run): build it with distrun wrap or apptainer build"));
}

TEST_F(OpenImage, ASifPartitionWithoutASuperblockIsRefused) {
  test::patchBytes(sif_, test::kSifData, "xxxx");
  EXPECT_EQ(failure(sif_), data("its system partition (byte 32768) does not start with a "
                                "SquashFS superblock: build the image again"));
}

TEST_F(OpenImage, ASifPartitionSmallerThanItsSquashfsIsCorrupt) {
  test::patchBytes(sif_, test::kSifTable + 25, littleEndian(4096, 8));  // the object's size
  EXPECT_EQ(failure(sif_), data("corrupt: its SquashFS file system is 5000 bytes, its system "
                                "partition holds 4096: build the image again"));
}

}  // namespace
}  // namespace distrun::container
