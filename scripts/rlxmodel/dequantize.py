"""ggml blocks -> float64, following ggml's dequantize_row_* for each block layout.

Every function takes `b`, a uint8 array of shape (n_blocks, block_bytes), and returns a float64
array of shape (n_blocks, block_elements). The f16 scales are converted exactly, and the
products are formed in float64, so the result is the exact value each block encodes.
"""

import numpy as np

from .ggml_types import GGML_TYPES


def _f16(b, at):
    """Little-endian f16 at byte offset `at` of every block -> float64 column (n, 1)."""
    return b[:, at:at + 2].copy().view("<f2").astype(np.float64)


def _nibbles_32(qs):
    """qs: (n, 16) bytes -> (n, 32): element j is the low nibble of qs[j], element j+16 the high."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)


def _bits_32(qh4):
    """qh: (n, 4) bytes = a LE u32 -> (n, 32) bits, bit i belongs to element i."""
    u = qh4.copy().view("<u4")                      # (n, 1)
    return ((u >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int64)


# --------------------------------------------------------------------------- float types
def deq_f32(b):
    return b.copy().view("<f4").astype(np.float64)


def deq_f16(b):
    return b.copy().view("<f2").astype(np.float64)


def deq_bf16(b):
    return (b.copy().view("<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)


# --------------------------------------------------------------------------- 32-element blocks
def deq_q8_0(b):
    # {f16 d; i8 qs[32]}: x = d * q
    return _f16(b, 0) * b[:, 2:34].view(np.int8).astype(np.float64)


def deq_q4_0(b):
    # {f16 d; u8 qs[16]}: x = d * (q - 8)
    return _f16(b, 0) * (_nibbles_32(b[:, 2:18]) - 8)


def deq_q4_1(b):
    # {f16 d; f16 m; u8 qs[16]}: x = d * q + m
    return _f16(b, 0) * _nibbles_32(b[:, 4:20]) + _f16(b, 2)


def deq_q5_0(b):
    # {f16 d; u8 qh[4]; u8 qs[16]}: q = nibble | (qh bit i) << 4; x = d * (q - 16)
    q = _nibbles_32(b[:, 6:22]) | (_bits_32(b[:, 2:6]) << 4)
    return _f16(b, 0) * (q - 16)


def deq_q5_1(b):
    # {f16 d; f16 m; u8 qh[4]; u8 qs[16]}: x = d * q + m
    q = _nibbles_32(b[:, 8:24]) | (_bits_32(b[:, 4:8]) << 4)
    return _f16(b, 0) * q + _f16(b, 2)


# --------------------------------------------------------------------------- k-quants (256)
def _scale_min_k4(sc12):
    """The 12-byte packed 6-bit (scale, min) pairs of q4_K/q5_K -> two (n, 8) int arrays.
    j < 4: scale = s[j] & 63, min = s[j+4] & 63;
    j >= 4: scale = (s[j+4] & 15) | (s[j-4] >> 6) << 4, min = (s[j+4] >> 4) | (s[j] >> 6) << 4."""
    s = sc12.astype(np.int64)
    sc = np.empty((s.shape[0], 8), np.int64)
    mn = np.empty((s.shape[0], 8), np.int64)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


def deq_q2_k(b):
    # {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}
    # element e = 128*n + 32*j + l (n<2, j<4, l<32): q = (qs[32n+l] >> 2j) & 3,
    # sub-block e//16 with scale = scales & 15, min = scales >> 4; x = d*scale*q - dmin*min
    n = b.shape[0]
    sc = b[:, 0:16].astype(np.int64)
    qs = b[:, 16:80].astype(np.int64).reshape(n, 2, 1, 32)
    q = (qs >> (2 * np.arange(4).reshape(1, 1, 4, 1))) & 3        # (n, 2, 4, 32)
    q = q.reshape(n, 16, 16)
    d, dmin = _f16(b, 80), _f16(b, 82)
    x = (d * (sc & 15))[:, :, None] * q - (dmin * (sc >> 4))[:, :, None]
    return x.reshape(n, 256)


def deq_q3_k(b):
    # {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}
    # element e = 128*n + 32*j + l: low2 = (qs[32n+l] >> 2j) & 3, high = (hmask[l] >> (4n+j)) & 1,
    # q = low2 - (high ? 0 : 4); 16 signed 6-bit scales (stored + 32): scale i has its low 4 bits
    # in scales[i % 8] >> (4 * (i // 8)) and its high 2 bits in scales[8 + i % 4] >> (2 * (i // 4));
    # x = d * (scale[e//16] - 32) * q
    n = b.shape[0]
    hm = b[:, 0:32].astype(np.int64).reshape(n, 1, 1, 32)
    qs = b[:, 32:96].astype(np.int64).reshape(n, 2, 1, 32)
    s = b[:, 96:108].astype(np.int64)
    i = np.arange(16)
    low4 = (s[:, i % 8] >> (4 * (i // 8))) & 0x0F
    high2 = (s[:, 8 + i % 4] >> (2 * (i // 4))) & 3
    scale = (low4 | (high2 << 4)) - 32                                # (n, 16)
    j = np.arange(4).reshape(1, 1, 4, 1)
    nn = np.arange(2).reshape(1, 2, 1, 1)
    low2 = (qs >> (2 * j)) & 3
    high = (hm >> (4 * nn + j)) & 1
    q = (low2 - 4 * (1 - high)).reshape(n, 16, 16)
    d = _f16(b, 108)
    return ((d * scale)[:, :, None] * q).reshape(n, 256)


def deq_q4_k(b):
    # {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}
    # element e = 64*c + l (c<4): l<32 -> low nibble of qs[32c+l], l>=32 -> high nibble of
    # qs[32c+l-32]; sub-block e//32; x = d*scale*q - dmin*min
    n = b.shape[0]
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _scale_min_k4(b[:, 4:16])
    qs = b[:, 16:144].astype(np.int64).reshape(n, 4, 1, 32)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(n, 8, 32)
    x = (d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]
    return x.reshape(n, 256)


def deq_q5_k(b):
    # {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}
    # as q4_K plus a 5th bit: element 64*c + l takes bit (2c + (l >= 32)) of qh[l % 32]
    n = b.shape[0]
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _scale_min_k4(b[:, 4:16])
    qh = b[:, 16:48].astype(np.int64).reshape(n, 1, 1, 32)
    qs = b[:, 48:176].astype(np.int64).reshape(n, 4, 1, 32)
    low = np.concatenate([qs & 0x0F, qs >> 4], axis=2)                # (n, 4, 2, 32)
    bit = 2 * np.arange(4).reshape(1, 4, 1, 1) + np.arange(2).reshape(1, 1, 2, 1)
    high = (qh >> bit) & 1
    q = (low | (high << 4)).reshape(n, 8, 32)
    x = (d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]
    return x.reshape(n, 256)


def deq_q6_k(b):
    # {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
    # element e = 128*n + 32*k + l (n<2, k<4, l<32): low 4 bits from ql[64n + 32*(k%2) + l]
    # (low nibble for k<2, high nibble for k>=2), high 2 bits = (qh[32n+l] >> 2k) & 3;
    # q = value - 32; x = d * scales[e//16] * q
    n = b.shape[0]
    ql = b[:, 0:128].astype(np.int64).reshape(n, 2, 2, 32)            # [n][k%2][l]
    qh = b[:, 128:192].astype(np.int64).reshape(n, 2, 1, 32)
    sc = b[:, 192:208].view(np.int8).astype(np.int64)
    d = _f16(b, 208)
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=2)                # k = 0,1 low; 2,3 high
    high = (qh >> (2 * np.arange(4).reshape(1, 1, 4, 1))) & 3
    q = ((low | (high << 4)) - 32).reshape(n, 16, 16)
    return ((d * sc)[:, :, None] * q).reshape(n, 256)


DEQUANTIZERS = {
    "f32": deq_f32, "f16": deq_f16, "bf16": deq_bf16,
    "q8_0": deq_q8_0, "q4_0": deq_q4_0, "q4_1": deq_q4_1, "q5_0": deq_q5_0, "q5_1": deq_q5_1,
    "q2_k": deq_q2_k, "q3_k": deq_q3_k, "q4_k": deq_q4_k, "q5_k": deq_q5_k, "q6_k": deq_q6_k,
}


def dequantize(raw, tname, shape):
    """raw: uint8 bytes of a whole tensor; shape: numpy order (..., row_length) -> float64."""
    _, bs, bb = GGML_TYPES[tname]
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, bb)
    return DEQUANTIZERS[tname](blocks).reshape(shape)
