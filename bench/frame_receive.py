"""What a connection's receive buffer costs per request frame: `protocol.wire.FrameBuffer` fed as the event loop feeds
it, in process, no socket.

    .venv/bin/python -m bench.frame_receive [--size 1000000] [--read 262144] [--held 4] [--frames 2000] [--repeats 5]

Each frame is written into the space `writable()` offers in reads of at most `--read` bytes (a `memmove`, standing
in for the kernel's copy out of the socket), counted with `advance()`, and taken with `next_frame()`; the last
`--held` frames taken stay referenced, as the records of acks=all answers waiting for their fsync do. Prints the
best of `--repeats` runs, in µs per frame. Run it against another tree with `PYTHONPATH=<tree>/src` to compare.
"""

from __future__ import annotations

import argparse
import struct
import time
from collections import deque

from kafkalite.protocol.wire import FrameBuffer


def per_frame_us(size: int, read: int, held: int, frames: int) -> float:
    stream = struct.pack(">i", size) + bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    buffer = FrameBuffer()
    kept: deque[bytes | memoryview] = deque(maxlen=held or None)
    began = time.perf_counter()
    for _ in range(frames):
        position = 0
        while position < len(stream):
            room = buffer.writable()
            count = min(len(room), len(stream) - position, read)
            room[:count] = stream[position : position + count]
            buffer.advance(count)
            position += count
        frame = buffer.next_frame()
        assert frame is not None
        if held:
            kept.append(frame)
    return (time.perf_counter() - began) / frames * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000, help="frame body bytes")
    parser.add_argument("--read", type=int, default=256 * 1024, help="most bytes one read brings")
    parser.add_argument("--held", type=int, default=4, help="frames kept referenced after they are taken")
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    best = min(per_frame_us(args.size, args.read, args.held, args.frames) for _ in range(args.repeats))
    print(f"{best:.1f} µs per frame of {args.size:,} bytes (reads of at most {args.read:,}, {args.held} held)")


if __name__ == "__main__":
    main()
