"""GGUF v3: a minimal writer and reader (little-endian only).

File layout:
  "GGUF"  u32 version=3  u64 n_tensors  u64 n_kv
  n_kv x  { string key, u32 value_type, value }
  n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
  zero padding to general.alignment (default 32)
  tensor data; each tensor starts at data_start + offset, offsets are multiples of the alignment
A string is u64 length + UTF-8 bytes (no terminator). An array value is u32 element type,
u64 count, then the elements. ne[0] is the fastest-varying dimension (a row of a matrix), so a
numpy array of shape (rows, cols) is stored with ne = [cols, rows].
"""

import struct

import numpy as np

from .ggml_types import GGML_TYPES, TYPE_BY_ID, row_bytes
from .io import AtomicFile

MAGIC = b"GGUF"
VERSION = 3
DEFAULT_ALIGNMENT = 32

# metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)

_SCALAR_FMT = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i",
               FLOAT32: "f", BOOL: "?", UINT64: "Q", INT64: "q", FLOAT64: "d"}


# ----------------------------------------------------------------------------------------------
# writer
# ----------------------------------------------------------------------------------------------
def _pack_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _pack_value(vtype, value):
    if vtype == STRING:
        return _pack_string(value)
    if vtype == ARRAY:
        etype, items = value
        out = [struct.pack("<IQ", etype, len(items))]
        if etype == STRING:
            out += [_pack_string(s) for s in items]
        else:
            out.append(struct.pack("<%d%s" % (len(items), _SCALAR_FMT[etype]), *items))
        return b"".join(out)
    return struct.pack("<" + _SCALAR_FMT[vtype], value)


class TensorSpec:
    """A tensor to write: `produce()` returns its bytes (uint8 array or bytes) when it is written,
    so a large model never has to be held in memory at once."""

    def __init__(self, name, shape, tname, produce):
        self.name = name
        self.shape = tuple(int(s) for s in shape)   # numpy order: (..., rows, row_length)
        self.tname = tname
        self.produce = produce

    @property
    def ne(self):
        return list(reversed(self.shape))

    @property
    def nbytes(self):
        ne = self.ne
        nrows = int(np.prod(ne[1:])) if len(ne) > 1 else 1
        return nrows * row_bytes(self.tname, ne[0])


def write_gguf(path, kvs, tensors, alignment=DEFAULT_ALIGNMENT):
    """kvs: list of (key, value_type, value); tensors: list of TensorSpec. Atomic."""
    keys = [k for k, _, _ in kvs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate metadata key")
    if "general.alignment" not in keys and alignment != DEFAULT_ALIGNMENT:
        kvs = list(kvs) + [("general.alignment", UINT32, alignment)]

    head = [MAGIC, struct.pack("<IQQ", VERSION, len(tensors), len(kvs))]
    for key, vtype, value in kvs:
        head += [_pack_string(key), struct.pack("<I", vtype), _pack_value(vtype, value)]
    offset = 0
    offsets = []
    for t in tensors:
        ne = t.ne
        head += [_pack_string(t.name), struct.pack("<I", len(ne)), struct.pack("<%dQ" % len(ne), *ne),
                 struct.pack("<IQ", GGML_TYPES[t.tname][0], offset)]
        offsets.append(offset)
        offset += -(-t.nbytes // alignment) * alignment
    head = b"".join(head)

    with AtomicFile(path) as f:
        f.write(head)
        f.write(b"\0" * (-len(head) % alignment))
        data_start = f.tell()
        for t, off in zip(tensors, offsets):
            assert f.tell() == data_start + off, t.name
            data = t.produce()
            data = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
            if len(data) != t.nbytes:
                raise ValueError(f"{t.name}: produced {len(data)} bytes, expected {t.nbytes}")
            f.write(data)
            f.write(b"\0" * (-len(data) % alignment))


# ----------------------------------------------------------------------------------------------
# reader
# ----------------------------------------------------------------------------------------------
class GGUFTensor:
    def __init__(self, name, ne, tname, offset, nbytes):
        self.name = name
        self.ne = ne
        self.tname = tname
        self.offset = offset      # absolute file offset
        self.nbytes = nbytes

    @property
    def shape(self):
        """numpy order (..., rows, row_length)."""
        return tuple(reversed(self.ne))


class GGUFFile:
    """Parsed header of a GGUF file; `raw(name)` returns a tensor's bytes as a uint8 array."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self._buf = f.read()
        self._pos = 0
        if self._take(4) != MAGIC:
            raise ValueError(f"{path}: not a GGUF file")
        (self.version,) = self._unpack("<I")
        if self.version != VERSION:
            raise ValueError(f"{path}: GGUF version {self.version}, expected {VERSION}")
        n_tensors, n_kv = self._unpack("<QQ")
        self.metadata = {}
        self.metadata_types = {}
        for _ in range(n_kv):
            key = self._string()
            (vtype,) = self._unpack("<I")
            self.metadata[key] = self._value(vtype)
            self.metadata_types[key] = vtype
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            (n_dims,) = self._unpack("<I")
            ne = list(self._unpack("<%dQ" % n_dims))
            tid, off = self._unpack("<IQ")
            if tid not in TYPE_BY_ID:
                raise ValueError(f"{path}: tensor {name} has unsupported ggml type {tid}")
            infos.append((name, ne, TYPE_BY_ID[tid], off))
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        data_start = -(-self._pos // self.alignment) * self.alignment
        self.tensors = {}
        for name, ne, tname, off in infos:
            if off % self.alignment:
                raise ValueError(f"{path}: tensor {name} offset {off} not aligned")
            nrows = int(np.prod(ne[1:])) if len(ne) > 1 else 1
            nbytes = nrows * row_bytes(tname, ne[0])
            if data_start + off + nbytes > len(self._buf):
                raise ValueError(f"{path}: tensor {name} runs past the end of the file")
            self.tensors[name] = GGUFTensor(name, ne, tname, data_start + off, nbytes)

    def _take(self, n):
        b = self._buf[self._pos:self._pos + n]
        if len(b) != n:
            raise ValueError(f"{self.path}: truncated header")
        self._pos += n
        return b

    def _unpack(self, fmt):
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))

    def _string(self):
        (n,) = self._unpack("<Q")
        return self._take(n).decode("utf-8")

    def _value(self, vtype):
        if vtype == STRING:
            return self._string()
        if vtype == ARRAY:
            etype, n = self._unpack("<IQ")
            if etype == STRING:
                return [self._string() for _ in range(n)]
            return list(self._unpack("<%d%s" % (n, _SCALAR_FMT[etype])))
        if vtype not in _SCALAR_FMT:
            raise ValueError(f"{self.path}: unknown metadata type {vtype}")
        return self._unpack("<" + _SCALAR_FMT[vtype])[0]

    def raw(self, name):
        t = self.tensors[name]
        return np.frombuffer(self._buf, dtype=np.uint8, count=t.nbytes, offset=t.offset)
