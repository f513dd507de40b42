"""safetensors: u64 LE header length N, N bytes of JSON header, then the raw tensor data.

Header: {"__metadata__": {...}, name: {"dtype": "F32"|"F16"|"BF16", "shape": [...],
"data_offsets": [begin, end]}} with offsets relative to the first byte after the header.
The header is padded with spaces to a multiple of 8 bytes.
"""

import json
import struct

import numpy as np

from .io import AtomicFile

DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, produce) where produce() returns a contiguous array
    (or bytes) holding exactly the little-endian bytes of that dtype; it is called when the
    tensor is written, so the model is never held in memory at once. Atomic."""
    header = {"__metadata__": dict(metadata or {"format": "pt"})}
    off = 0
    for name, dtype, shape, _ in tensors:
        n = int(np.prod(shape)) if len(shape) else 1
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n * DTYPE_BYTES[dtype]]}
        off += n * DTYPE_BYTES[dtype]
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    with AtomicFile(path) as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name, dtype, shape, produce in tensors:
            data = produce()
            b = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
            b0, e0 = header[name]["data_offsets"]
            if len(b) != e0 - b0:
                raise ValueError(f"{name}: {len(b)} bytes for {dtype}{list(shape)}")
            f.write(b)


class SafetensorsFile:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self._buf = f.read()
        (n,) = struct.unpack("<Q", self._buf[:8])
        if 8 + n > len(self._buf):
            raise ValueError(f"{path}: header runs past the end of the file")
        header = json.loads(self._buf[8:8 + n].decode("utf-8"))
        self.metadata = header.pop("__metadata__", {})
        self.data_start = 8 + n
        self.tensors = header
        for name, t in header.items():
            b, e = t["data_offsets"]
            if t["dtype"] not in DTYPE_BYTES:
                raise ValueError(f"{path}: {name} has unsupported dtype {t['dtype']}")
            if e - b != int(np.prod(t["shape"])) * DTYPE_BYTES[t["dtype"]] or self.data_start + e > len(self._buf):
                raise ValueError(f"{path}: {name} has bad data_offsets")

    def get_f64(self, name):
        """The tensor as float64, converted exactly from its stored dtype."""
        t = self.tensors[name]
        b, e = t["data_offsets"]
        raw = np.frombuffer(self._buf, dtype=np.uint8, count=e - b, offset=self.data_start + b)
        if t["dtype"] == "F32":
            x = raw.view("<f4").astype(np.float64)
        elif t["dtype"] == "F16":
            x = raw.view("<f2").astype(np.float64)
        else:  # BF16: the upper 16 bits of an IEEE float32
            x = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return x.reshape(t["shape"])
