"""The observer's process: `python -m autograder.engine.observer.serve`.

Started by `autograder.engine.observer.client` (sandboxed like a cold kernel where a
sandbox can be had), it imports TensorFlow, caps its own data memory (`RLIMIT_DATA`, what
it uses once started plus `COURSE_GRADE_OBSERVER_MB`, 1536 by default: a graph that asks for
more gets TensorFlow's out-of-memory error, and the client's watch on its resident memory
stops it besides), says READY, then answers requests one at a time on its stdin and stdout.
A frame is 4 bytes of length (big-endian) and a JSON tree of `autograder.engine.wire`
(arrays as `.npy` read with `allow_pickle=False`). A request is {"op": "run", "request": ...,
"timeout_s": t} (`graphs.run`), {"op": "keras_layer", "request": ...}
(`keras_layers.observe`), {"op": "tf1_train", "request": ...} (`tf1graph.train`) or
{"op": "op_types", "graph": ...} (`ops.check`, then `ops.op_types`); the answer is
{"ok": value} or {"error": {"type": kind, "message": text}}.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys

READY = b"course-grade observer ready\n"
MAX_FRAME = 64 * 2**20
DEFAULT_MB = 1536


def read_frame(stream) -> bytes | None:
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes; at most {MAX_FRAME}")
    body = stream.read(size)
    if len(body) < size:
        return None
    return body


def write_frame(stream, body: bytes) -> None:
    stream.write(struct.pack(">I", len(body)) + body)
    stream.flush()


def _data_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _cap_memory() -> None:
    budget = int(os.environ.get("COURSE_GRADE_OBSERVER_MB", DEFAULT_MB)) * 2**20
    limit = _data_bytes() + budget
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _answer(message: dict) -> dict:
    from autograder.engine.observer import graphs, ops

    op = message.get("op")
    if op == "run":
        return graphs.run(message["request"], float(message.get("timeout_s", 60)))
    if op == "keras_layer":
        from autograder.engine.observer import keras_layers

        return keras_layers.observe(message["request"])
    if op == "tf1_train":
        from autograder.engine.observer import tf1graph

        return tf1graph.train(**message["request"])
    if op == "op_types":
        import numpy as np

        return ops.op_types(ops.check(np.asarray(message["graph"], np.uint8).tobytes()))
    raise ValueError(f"unknown request {op!r}")


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    from autograder.engine import wire
    from autograder.engine.observer import graphs  # noqa: F401 - loaded before the cap

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    _cap_memory()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing printed may reach the frames
    stdout.write(READY)
    stdout.flush()
    while True:
        body = read_frame(stdin)
        if body is None:
            return
        try:
            answer = _answer(wire.decode(json.loads(body), wire.Table()))
            text = json.dumps({"ok": wire.encode(answer, wire.Table())})
        except Exception as error:  # noqa: BLE001 - the grader learns the kind and message
            text = json.dumps({"error": {"type": type(error).__name__,
                                         "message": str(error)[:2000]}})
        write_frame(stdout, text.encode())


if __name__ == "__main__":
    main()
