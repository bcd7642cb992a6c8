#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/): a few valid and invalid
# inputs each, in the layout the target's header comment describes. The files are checked in;
# run this again only when a layout changes:  fuzz/make_corpus.py
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- incoming: [handlers][kind, nargs per handler][max_medium/32][segment u16][source][message]
SHORT, MEDIUM, LONG, INLINE = 0, 1, 2, 0x80
TABLE = [(SHORT, 2), (MEDIUM, 1), (LONG, 0)]
SOURCE = 3
PREFIX = bytes([len(TABLE)]) + b"".join(bytes(s) for s in TABLE) + \
    bytes([4]) + struct.pack("<H", 1024) + bytes([SOURCE])  # max_medium 128, segment 1 KiB


def header(handler, kind, nargs, source=SOURCE):
    return struct.pack("<HBBI", handler, kind, nargs, source)


def incoming(name, msg):
    write("incoming", name, PREFIX + msg)


incoming("valid_short", header(0, SHORT, 2) + struct.pack("<QQ", 7, 8))
incoming("valid_medium", header(1, MEDIUM, 1) + struct.pack("<Q", 9) + b"m" * 20)
incoming("valid_long", header(2, LONG, 0) + struct.pack("<QQ", 100, 200))
incoming("valid_long_inline", header(2, LONG | INLINE, 0) + struct.pack("<QQ", 16, 8) + b"i" * 8)
incoming("invalid_wrong_source", header(0, SHORT, 2, source=5) + struct.pack("<QQ", 7, 8))
incoming("invalid_long_outside", header(2, LONG, 0) + struct.pack("<QQ", 1000, 100))
incoming("invalid_medium_too_big", header(1, MEDIUM, 1) + struct.pack("<Q", 9) + b"m" * 200)
incoming("invalid_truncated", header(0, SHORT, 2)[:4])
incoming("invalid_inline_long_length",
         header(2, LONG | INLINE, 0) + struct.pack("<QQ", 16, 8) + b"i" * 7)
incoming("invalid_inline_long_no_trailer", header(2, LONG | INLINE, 0) + b"t" * 8)

# ---- mpi_eager: [tag][largest u32][received bytes]
LARGEST = 131064  # any value will do; this is max_message() of a 256 KiB ring


def eager(name, tag, data, largest=LARGEST):
    write("mpi_eager", name, bytes([tag]) + struct.pack("<I", largest) + data)


def pack(*messages):
    out = b""
    for m in messages:
        out += struct.pack("<II", len(m), 0) + m + b"\0" * (-len(m) % 8)
    return out


SHORT_MSG = header(0, SHORT, 2) + struct.pack("<QQ", 7, 8)
eager("valid_message", 0, pack(SHORT_MSG))
eager("valid_pack_mixed_lane1", 1, pack(SHORT_MSG, b"", b"abc", b"m" * 1000, SHORT_MSG))
eager("valid_big", 2, struct.pack("<Q", 100000))
eager("valid_credit", 4, struct.pack("<II", 1, 32))
eager("valid_fail", 5, b"rank 1 failed: deliberate failure")
eager("invalid_pack_empty", 1, b"")
eager("invalid_pack_cut", 0, pack(SHORT_MSG) + struct.pack("<II", 100, 0) + b"x" * 8)
eager("invalid_pack_reserved", 0, struct.pack("<II", 16, 1) + b"y" * 16)
eager("invalid_pack_header_cut", 0, pack(SHORT_MSG) + b"\x08\0\0")
eager("invalid_big_short", 3, b"\xff\xff\xff")
eager("invalid_big_fits", 2, struct.pack("<Q", 8192 + 256 - 8))
eager("invalid_big_huge", 2, struct.pack("<Q", 1 << 40))
eager("invalid_credit_lane", 4, struct.pack("<II", 7, 32))
eager("invalid_tag", 6, b"x")
eager("invalid_longer_than_slot", 0, pack(b"s" * (8192 + 256 - 8)) + b"\0" * 8)
