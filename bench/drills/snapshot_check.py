#!/usr/bin/env python3
"""snapshot_check.py PATH: exit 0 when PATH is a whole distrun snapshot.

The envelope (distrun/train/snapshot_file.cc): 'DRSNAP1\\n', the payload's
length (u64 little endian) and CRC-32 (u32), then the payload. Prints what
is wrong otherwise (exit 1).
"""
import struct
import sys
import zlib

path = sys.argv[1]
try:
    data = open(path, "rb").read()
except OSError as e:
    sys.exit(f"{path}: {e.strerror}")
if len(data) < 20 or data[:8] != b"DRSNAP1\n":
    sys.exit(f"{path}: not a snapshot")
size, crc = struct.unpack("<QI", data[8:20])
if len(data) - 20 != size:
    sys.exit(f"{path}: {len(data) - 20} bytes of data, the header says {size}")
if zlib.crc32(data[20:]) != crc:
    sys.exit(f"{path}: CRC-32 mismatch")
print(f"{path}: whole ({size} bytes)")
