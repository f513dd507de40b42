"""float32 -> ggml blocks: vectorized numpy quantizers, one function per type.

Each `quant_<type>(x)` takes a float32 array of shape (rows, row_length) and returns uint8 of
shape (rows, row_bytes) holding valid ggml blocks. The choice of scales is a small grid search
per (sub-)block (reasonable, not optimal, and not bit-identical to llama-quantize); what matters
is that every block is valid and that the quants are computed against the scales exactly as they
are stored (after rounding to f16 and to the 4/6/8-bit sub-block scale grid), so the decoded
values are as close to x as those stored scales allow.
"""

import numpy as np

from .ggml_types import GGML_TYPES, QK_K

# Range shrink factors tried per (sub-)block: clipping a few outliers often lowers the error.
_GRID = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75)


# --------------------------------------------------------------------------- helpers
def _f16(x):
    """Round to IEEE half; returns (value as float64, little-endian bytes (..., 2))."""
    h = np.asarray(x, dtype=np.float64).astype("<f2")
    if not np.all(np.isfinite(h)):
        raise ValueError("scale overflows f16; weights too large to quantize")
    return h.astype(np.float64), h[..., None].view(np.uint8)


def _div(a, b):
    """a / b with 0 where b == 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b != 0, a / np.where(b != 0, b, 1), 0.0)


def _fit_symmetric(x, nneg, npos):
    """Signed scale per row of the last axis: x ~ s*q, q in [-nneg, npos]. The candidate
    scales map the largest-magnitude value to -nneg (times a shrink factor) like ggml does.
    The search runs in float32 (it only picks a scale; the quants are recomputed later)."""
    x = x.astype(np.float32)
    idx = np.abs(x).argmax(axis=-1)[..., None]
    s0 = np.take_along_axis(x, idx, axis=-1)[..., 0] / np.float32(-nneg)
    best_s = s0.copy()
    best_e = np.full(s0.shape, np.inf, np.float32)
    inv0 = _div(np.float32(1), s0).astype(np.float32)[..., None]
    for f in _GRID:
        q = x * (inv0 / np.float32(f))
        np.rint(q, out=q)
        np.clip(q, -nneg, npos, out=q)
        q *= (s0 * np.float32(f))[..., None]
        q -= x
        e = np.einsum("...i,...i->...", q, q)
        better = e < best_e
        best_s = np.where(better, s0 * np.float32(f), best_s)
        best_e = np.where(better, e, best_e)
    return best_s.astype(np.float64)


def _fit_affine(x, nmax, offset_le_zero):
    """Scale s >= 0 and offset o per row of the last axis: x ~ s*q + o, q in [0, nmax].
    With offset_le_zero (k-quants store -o as an unsigned min) o is clamped to <= 0.
    The search runs in float32 (it only picks s and o; the quants are recomputed later)."""
    x = x.astype(np.float32)
    lo = x.min(axis=-1)
    hi = x.max(axis=-1)
    if offset_le_zero:
        lo = np.minimum(lo, 0)
        hi = np.maximum(hi, 0)
    best_s = (hi - lo) / np.float32(nmax)
    best_o = lo.copy()
    best_e = np.full(lo.shape, np.inf, np.float32)
    for f in _GRID:
        o = lo * np.float32(f)
        s = (hi * np.float32(f) - o) / np.float32(nmax)
        q = x - o[..., None]
        q *= _div(np.float32(1), s).astype(np.float32)[..., None]
        np.rint(q, out=q)
        np.clip(q, 0, nmax, out=q)
        q *= s[..., None]
        q += o[..., None]
        q -= x
        e = np.einsum("...i,...i->...", q, q)
        better = e < best_e
        best_s = np.where(better, s, best_s)
        best_o = np.where(better, o, best_o)
        best_e = np.where(better, e, best_e)
    return best_s.astype(np.float64), best_o.astype(np.float64)


def _blocks(x, n):
    x = np.asarray(x, dtype=np.float64)
    if x.shape[-1] % n:
        raise ValueError(f"row length {x.shape[-1]} is not a multiple of {n}")
    return x.reshape(-1, n)


def _rows(out, rows):
    return np.ascontiguousarray(out).reshape(rows, -1)


def _pack_nibbles_32(q):
    """q: (n, 32) ints 0..15 -> (n, 16) bytes: low nibble = element j, high = element j + 16."""
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def _pack_bits_32(bits):
    """bits: (n, 32) 0/1 -> (n, 4) bytes of a LE u32 with bit i = element i."""
    u = (bits.astype(np.uint32) << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
    return u.astype("<u4")[:, None].view(np.uint8)


# --------------------------------------------------------------------------- float types
def quant_f32(x):
    return _rows(np.asarray(x, dtype="<f4").view(np.uint8), x.shape[0])


def quant_f16(x):
    return _rows(np.asarray(x, dtype=np.float32).astype("<f2").view(np.uint8), x.shape[0])


def to_bf16_bits(x):
    """float32 -> bf16 bit patterns (uint16), round to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(x, dtype="<f4").view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def quant_bf16(x):
    return _rows(to_bf16_bits(x).astype("<u2").view(np.uint8), x.shape[0])


# --------------------------------------------------------------------------- 32-element blocks
def quant_q8_0(x):
    b = _blocks(x, 32)
    d, db = _f16(np.abs(b).max(axis=1) / 127)
    q = np.clip(np.rint(_div(b, d[:, None])), -127, 127).astype(np.int8)
    return _rows(np.concatenate([db, q.view(np.uint8)], axis=1), x.shape[0])


def quant_q4_0(x):
    b = _blocks(x, 32)
    d, db = _f16(_fit_symmetric(b, 8, 7))
    q = (np.clip(np.rint(_div(b, d[:, None])), -8, 7) + 8).astype(np.int64)
    return _rows(np.concatenate([db, _pack_nibbles_32(q)], axis=1), x.shape[0])


def quant_q4_1(x):
    b = _blocks(x, 32)
    s, o = _fit_affine(b, 15, offset_le_zero=False)
    d, db = _f16(s)
    m, mb = _f16(o)
    q = np.clip(np.rint(_div(b - m[:, None], d[:, None])), 0, 15).astype(np.int64)
    return _rows(np.concatenate([db, mb, _pack_nibbles_32(q)], axis=1), x.shape[0])


def quant_q5_0(x):
    b = _blocks(x, 32)
    d, db = _f16(_fit_symmetric(b, 16, 15))
    q = (np.clip(np.rint(_div(b, d[:, None])), -16, 15) + 16).astype(np.int64)
    return _rows(np.concatenate([db, _pack_bits_32(q >> 4), _pack_nibbles_32(q & 15)], axis=1), x.shape[0])


def quant_q5_1(x):
    b = _blocks(x, 32)
    s, o = _fit_affine(b, 31, offset_le_zero=False)
    d, db = _f16(s)
    m, mb = _f16(o)
    q = np.clip(np.rint(_div(b - m[:, None], d[:, None])), 0, 31).astype(np.int64)
    return _rows(np.concatenate([db, mb, _pack_bits_32(q >> 4), _pack_nibbles_32(q & 15)], axis=1),
                 x.shape[0])


# --------------------------------------------------------------------------- k-quants
def _superblock_affine(xs, nmax, scale_bits):
    """xs: (nb, n_sub, sub_len). Sub-block affine fit, then the sub-block scales and mins are
    quantized to `scale_bits` unsigned ints under f16 super-scales d and dmin.
    Returns (q, sc, mq, d_bytes, dmin_bytes) with x ~ d*sc*q - dmin*mq."""
    s, o = _fit_affine(xs, nmax, offset_le_zero=True)        # (nb, n_sub)
    mins = -o
    top = (1 << scale_bits) - 1
    d, db = _f16(s.max(axis=1) / top)
    dm, dmb = _f16(mins.max(axis=1) / top)
    sc = np.clip(np.rint(_div(s, d[:, None])), 0, top).astype(np.int64)
    mq = np.clip(np.rint(_div(mins, dm[:, None])), 0, top).astype(np.int64)
    eff = d[:, None] * sc
    off = dm[:, None] * mq
    q = np.clip(np.rint(_div(xs + off[..., None], eff[..., None])), 0, nmax).astype(np.int64)
    return q, sc, mq, db, dmb


def _superblock_symmetric(xs, nneg, npos, scale_lo, scale_hi):
    """xs: (nb, n_sub, sub_len). Signed sub-block scales quantized to ints in
    [scale_lo, scale_hi] under a positive f16 super-scale d. Returns (q, sc, d_bytes), x ~ d*sc*q."""
    s = _fit_symmetric(xs, nneg, npos)                        # (nb, n_sub), signed
    d, db = _f16(np.abs(s).max(axis=1) / min(-scale_lo, scale_hi))
    sc = np.clip(np.rint(_div(s, d[:, None])), scale_lo, scale_hi).astype(np.int64)
    eff = d[:, None] * sc
    q = np.clip(np.rint(_div(xs, eff[..., None])), -nneg, npos).astype(np.int64)
    return q, sc, db


def _pack_scale_min_k4(sc, mn):
    """8 six-bit scales and 8 six-bit mins -> the 12-byte q4_K/q5_K layout."""
    out = np.empty((sc.shape[0], 12), np.int64)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 15) | ((mn[:, 4:8] & 15) << 4)
    return out.astype(np.uint8)


def quant_q2_k(x):
    xs = _blocks(x, QK_K).reshape(-1, 16, 16)
    nb = xs.shape[0]
    q, sc, mq, db, dmb = _superblock_affine(xs, 3, 4)
    scales = (sc | (mq << 4)).astype(np.uint8)
    q = q.reshape(nb, 2, 4, 32)                                # element 128n + 32j + l
    qs = (q << (2 * np.arange(4).reshape(1, 1, 4, 1))).sum(axis=2).reshape(nb, 64).astype(np.uint8)
    return _rows(np.concatenate([scales, qs, db, dmb], axis=1), x.shape[0])


def quant_q3_k(x):
    xs = _blocks(x, QK_K).reshape(-1, 16, 16)
    nb = xs.shape[0]
    q, sc, db = _superblock_symmetric(xs, 4, 3, -32, 31)
    u = (q + 4).reshape(nb, 2, 4, 32)                          # 3-bit values, element 128n + 32j + l
    j = np.arange(4).reshape(1, 1, 4, 1)
    n = np.arange(2).reshape(1, 2, 1, 1)
    qs = ((u & 3) << (2 * j)).sum(axis=2).reshape(nb, 64).astype(np.uint8)
    hmask = ((u >> 2) << (4 * n + j)).sum(axis=(1, 2)).reshape(nb, 32).astype(np.uint8)
    v = sc + 32                                                # 6-bit, (nb, 16)
    scales = np.empty((nb, 12), np.int64)
    scales[:, 0:8] = (v[:, 0:8] & 15) | ((v[:, 8:16] & 15) << 4)
    hi = (v >> 4) & 3
    scales[:, 8:12] = hi[:, 0:4] | (hi[:, 4:8] << 2) | (hi[:, 8:12] << 4) | (hi[:, 12:16] << 6)
    return _rows(np.concatenate([hmask, qs, scales.astype(np.uint8), db], axis=1), x.shape[0])


def quant_q4_k(x):
    xs = _blocks(x, QK_K).reshape(-1, 8, 32)
    nb = xs.shape[0]
    q, sc, mq, db, dmb = _superblock_affine(xs, 15, 6)
    q = q.reshape(nb, 4, 2, 32)                                # element 64c + 32h + l
    qs = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).reshape(nb, 128).astype(np.uint8)
    return _rows(np.concatenate([db, dmb, _pack_scale_min_k4(sc, mq), qs], axis=1), x.shape[0])


def quant_q5_k(x):
    xs = _blocks(x, QK_K).reshape(-1, 8, 32)
    nb = xs.shape[0]
    q, sc, mq, db, dmb = _superblock_affine(xs, 31, 6)
    q = q.reshape(nb, 4, 2, 32)                                # element 64c + 32h + l
    low = q & 15
    qs = (low[:, :, 0, :] | (low[:, :, 1, :] << 4)).reshape(nb, 128).astype(np.uint8)
    bit = 2 * np.arange(4).reshape(1, 4, 1, 1) + np.arange(2).reshape(1, 1, 2, 1)
    qh = (((q >> 4) & 1) << bit).sum(axis=(1, 2)).astype(np.uint8)   # (nb, 32)
    return _rows(np.concatenate([db, dmb, _pack_scale_min_k4(sc, mq), qh, qs], axis=1), x.shape[0])


def quant_q6_k(x):
    xs = _blocks(x, QK_K).reshape(-1, 16, 16)
    nb = xs.shape[0]
    q, sc, db = _superblock_symmetric(xs, 32, 31, -128, 127)
    u = (q + 32).reshape(nb, 2, 4, 32)                         # element 128n + 32k + l
    ql = ((u[:, :, 0:2, :] & 15) | ((u[:, :, 2:4, :] & 15) << 4)).reshape(nb, 128).astype(np.uint8)
    qh = ((u >> 4) << (2 * np.arange(4).reshape(1, 1, 4, 1))).sum(axis=2).reshape(nb, 64).astype(np.uint8)
    return _rows(np.concatenate([ql, qh, sc.astype(np.int8).view(np.uint8), db], axis=1), x.shape[0])


QUANTIZERS = {
    "f32": quant_f32, "f16": quant_f16, "bf16": quant_bf16,
    "q8_0": quant_q8_0, "q4_0": quant_q4_0, "q4_1": quant_q4_1, "q5_0": quant_q5_0, "q5_1": quant_q5_1,
    "q2_k": quant_q2_k, "q3_k": quant_q3_k, "q4_k": quant_q4_k, "q5_k": quant_q5_k, "q6_k": quant_q6_k,
}


def quantize(x, tname):
    """x: float32 (rows, row_length) -> uint8 (rows, row_bytes) of `tname` blocks."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError("quantize expects a 2-D array")
    out = QUANTIZERS[tname](x)
    _, bs, bb = GGML_TYPES[tname]
    assert out.shape == (x.shape[0], x.shape[1] // bs * bb), (tname, out.shape)
    return out
