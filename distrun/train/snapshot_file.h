#pragma once

#include <optional>
#include <ostream>
#include <string>

// Snapshot files: an opaque payload in an envelope that makes a torn or
// altered file detectable, written so that a crash never loses the last
// good snapshot.
//
// Layout: "DRSNAP1\n", payload length (8 bytes, little endian), CRC-32 of
// the payload (4 bytes, little endian), payload.
namespace distrun::train {

// Keeps the current PATH (if any) as PATH.prev (a hard link; a rename
// where the filesystem has none), then replaces PATH with
// writeFileAtomically (temporary file, fsync, rename, fsync of the folder).
// IoError "snapshot PATH: STEP: REASON" (exit 74) when any step fails.
void writeSnapshotFile(const std::string& path, const std::string& payload);

// The payload of PATH; DataError naming the file for a wrong magic, a
// truncated or oversized file or a checksum mismatch; IoError when it
// cannot be read.
std::string readSnapshotFile(const std::string& path);

struct FoundSnapshot {
  std::string path;  // PATH or PATH.prev
  std::string payload;
};

// The newest good snapshot: PATH, else PATH.prev (after a crash between the
// two renames, or when PATH is corrupt: then a warning naming the problem
// goes to `warnings`). Nothing when neither exists. DataError when a file
// exists but none is good.
std::optional<FoundSnapshot> findLatestSnapshot(const std::string& path, std::ostream& warnings);

// Removes the PATH.tmp.PID files that writes interrupted by a crash left
// (writeFileAtomically's temporaries: a SIGKILL or a lost node while rank 0
// wrote), naming each in `notes`. Call it where only the caller writes PATH,
// before its first write (rank 0 at start), so none is being written. One
// that cannot be removed is left as it was; never throws.
void removeInterruptedWrites(const std::string& path, std::ostream& notes);

}  // namespace distrun::train
