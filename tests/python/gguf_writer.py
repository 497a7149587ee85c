"""A small GGUF v3 writer and the ggml block formats in NumPy, for the GGUF builder tests.

Written from the GGUF spec (ggml docs/gguf.md) and ggml's block layouts, independently of the
C++ reader: Q8_0 (fp16 d, 32 int8: q * d), Q4_0 (fp16 d, 16 bytes: element j in the low nibble of
byte j, j + 16 in its high nibble: (q - 8) * d), Q4_K (256-element super-blocks: fp16 d and dmin,
12 bytes of 6-bit sub-block scales and mins, 128 bytes of nibbles: d * sc * q - dmin * m) and Q6_K
(128 bytes of low nibbles, 64 of 2-bit high parts, 16 int8 scales, fp16 d: d * sc * (q - 32)) and
MXFP4 (an E8M0 exponent byte, 16 bytes of E2M1 codes laid out as Q4_0's).
Each quantizer returns the bytes and the exact float32 values ggml dequantizes them to.
"""

import struct

import numpy as np

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K, GGML_BF16, GGML_MXFP4 = (
    0, 1, 2, 8, 12, 13, 14, 30, 39)
BLOCK = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_Q4_0: (32, 18), GGML_Q8_0: (32, 34), GGML_Q4_K: (256, 144),
         GGML_Q5_K: (256, 176), GGML_Q6_K: (256, 210), GGML_BF16: (1, 2), GGML_MXFP4: (32, 17)}
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
           I64: "<q", F64: "<d"}


def gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value_bytes(vtype, v):
    if vtype == STR:
        return gguf_string(v)
    if vtype == ARR:
        etype, items = v
        out = struct.pack("<IQ", etype, len(items))
        return out + b"".join(value_bytes(etype, x) for x in items)
    return struct.pack(_SCALAR[vtype], v)


class Gguf:
    """kv: list of (key, type, value); tensors: list of (name, dims in ggml order, type, bytes)."""

    def __init__(self, alignment=32):
        self.kv, self.tensors, self.alignment = [], [], alignment

    def add(self, key, vtype, value):
        self.kv.append((key, vtype, value))

    def tensor(self, name, dims, ttype, data):
        self.tensors.append((name, list(dims), ttype, bytes(data)))

    def header(self, version=3, offsets=None):
        h = b"GGUF" + struct.pack("<IQQ", version, len(self.tensors), len(self.kv))
        for key, vtype, value in self.kv:
            h += gguf_string(key) + struct.pack("<I", vtype) + value_bytes(vtype, value)
        off, offs = 0, []
        for name, dims, ttype, data in self.tensors:
            offs.append(off)
            off += len(data) + (-len(data)) % self.alignment
        for (name, dims, ttype, data), o in zip(self.tensors, offsets or offs):
            h += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            h += struct.pack("<IQ", ttype, o)
        return h + b"\0" * ((-len(h)) % self.alignment), offs

    def to_bytes(self, version=3):
        h, offs = self.header(version)
        body = b""
        for (name, dims, ttype, data), o in zip(self.tensors, offs):
            body += data + b"\0" * ((-len(data)) % self.alignment)
        return h + body

    def write(self, path, version=3):
        data = self.to_bytes(version)
        path.write_bytes(data)
        return data


# ---- block formats: quantize(w [rows, K] float32) -> (bytes, dequantized float32 [rows, K]) ----

def _f16(x):
    return np.asarray(x, dtype=np.float16)


def q8_0(w):
    rows, k = w.shape
    x = w.reshape(rows, k // 32, 32).astype(np.float32)
    d = _f16(np.abs(x).max(-1) / 127.0)
    df = d.astype(np.float32)
    inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1), 0).astype(np.float32)
    q = np.clip(np.rint(x * inv[..., None]), -127, 127).astype(np.int8)
    blocks = np.concatenate([d[..., None].view(np.uint8).reshape(rows, k // 32, 2), q.view(np.uint8)], -1)
    return blocks.tobytes(), (q.astype(np.float32) * df[..., None]).reshape(rows, k)


def q4_0(w):
    rows, k = w.shape
    x = w.reshape(rows, k // 32, 32).astype(np.float32)
    idx = np.abs(x).argmax(-1)
    mx = np.take_along_axis(x, idx[..., None], -1)[..., 0]
    d = _f16(mx / np.float32(-8.0))
    df = d.astype(np.float32)
    inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1), 0).astype(np.float32)
    q = np.clip(np.trunc(x * inv[..., None] + np.float32(8.5)), 0, 15).astype(np.uint8)
    qs = q[..., :16] | (q[..., 16:] << 4)
    blocks = np.concatenate([d[..., None].view(np.uint8).reshape(rows, k // 32, 2), qs], -1)
    return blocks.tobytes(), ((q.astype(np.float32) - 8.0) * df[..., None]).reshape(rows, k)


# MXFP4's 4-bit E2M1 codes as ggml stores them (kvalues_mxfp4: twice the E2M1 values, the block's
# E8M0 exponent halved to match).
MXFP4_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)


def mxfp4(w):
    """MXFP4 (ggml's block_mxfp4: an E8M0 byte e, then 16 bytes, element j in the low nibble of byte j
    and j + 16 in its high nibble; value = MXFP4_VALUES[q] * 2^(e - 128)): e puts the block's largest
    magnitude at most 6 x 2^(e - 127), each value the nearest code."""
    rows, k = w.shape
    x = w.reshape(rows, k // 32, 32).astype(np.float64)
    amax = np.abs(x).max(-1)
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), 0).astype(np.int64) + 127
    half_step = np.exp2(e - 128.0)[..., None]
    q = np.abs(np.abs(x)[..., None] / half_step[..., None] - MXFP4_VALUES[:8]).argmin(-1) + 8 * (x < 0)
    q = q.astype(np.uint8)
    qs = q[..., :16] | (q[..., 16:] << 4)
    blocks = np.concatenate([e.astype(np.uint8)[..., None], qs], -1)
    return blocks.tobytes(), (MXFP4_VALUES[q] * half_step).astype(np.float32).reshape(rows, k)


def q4_k(w):
    rows, k = w.shape
    x = w.reshape(rows, k // 256, 8, 32).astype(np.float32)
    lo = np.minimum(x.min(-1), 0)
    hi = np.maximum(x.max(-1), lo + 1e-6)
    scale, mins = (hi - lo) / 15, -lo
    d, dmin = _f16(scale.max(-1) / 63), _f16(np.maximum(mins.max(-1), 1e-6) / 63)
    df, dminf = d.astype(np.float32), dmin.astype(np.float32)
    sc = np.clip(np.rint(scale / df[..., None]), 1, 63).astype(np.uint8)
    m = np.clip(np.rint(mins / dminf[..., None]), 0, 63).astype(np.uint8)
    d1 = (df[..., None] * sc.astype(np.float32)).astype(np.float32)
    m1 = (dminf[..., None] * m.astype(np.float32)).astype(np.float32)
    q = np.clip(np.rint((x + m1[..., None]) / d1[..., None]), 0, 15).astype(np.uint8)
    packed = np.zeros(x.shape[:2] + (12,), np.uint8)
    for j in range(4):
        packed[..., j] = (sc[..., j] & 63) | ((sc[..., j + 4] >> 4) << 6)
        packed[..., j + 4] = (m[..., j] & 63) | ((m[..., j + 4] >> 4) << 6)
        packed[..., j + 8] = (sc[..., j + 4] & 0xF) | ((m[..., j + 4] & 0xF) << 4)
    qs = np.concatenate([q[..., 2 * c, :] | (q[..., 2 * c + 1, :] << 4) for c in range(4)], -1)
    hdr = np.concatenate([d[..., None].view(np.uint8).reshape(*d.shape, 2),
                          dmin[..., None].view(np.uint8).reshape(*d.shape, 2)], -1)
    blocks = np.concatenate([hdr, packed, qs], -1)
    deq = (d1[..., None] * q.astype(np.float32) - m1[..., None]).astype(np.float32)
    return blocks.tobytes(), deq.reshape(rows, k)


def q6_k(w):
    rows, k = w.shape
    x = w.reshape(rows, k // 256, 16, 16).astype(np.float32)
    sf = np.maximum(np.abs(x).max(-1), 1e-6) / 31
    d = _f16(sf.max(-1) / 127)
    df = d.astype(np.float32)
    sc = np.clip(np.rint(sf / df[..., None]), 1, 127).astype(np.int8)
    ds = (df[..., None] * sc.astype(np.float32)).astype(np.float32)
    q = (np.clip(np.rint(x / ds[..., None]), -32, 31) + 32).astype(np.uint8).reshape(rows, k // 256, 2, 128)
    ql = np.zeros((rows, k // 256, 2, 64), np.uint8)
    qh = np.zeros((rows, k // 256, 2, 32), np.uint8)
    ql[..., :32] = (q[..., 0:32] & 0xF) | ((q[..., 64:96] & 0xF) << 4)
    ql[..., 32:] = (q[..., 32:64] & 0xF) | ((q[..., 96:128] & 0xF) << 4)
    qh[...] = (q[..., 0:32] >> 4) | ((q[..., 32:64] >> 4) << 2) | ((q[..., 64:96] >> 4) << 4) | ((q[..., 96:] >> 4) << 6)
    blocks = np.concatenate([ql.reshape(rows, k // 256, 128), qh.reshape(rows, k // 256, 64),
                             sc.view(np.uint8), d[..., None].view(np.uint8).reshape(*d.shape, 2)], -1)
    deq = ds[..., None] * (q.reshape(rows, k // 256, 16, 16).astype(np.float32) - 32)
    return blocks.tobytes(), deq.astype(np.float32).reshape(rows, k)


def f16(w):
    h = _f16(w)
    return h.tobytes(), h.astype(np.float32)


def f32(w):
    a = np.ascontiguousarray(w, dtype="<f4")
    return a.tobytes(), a


QUANTIZERS = {GGML_F32: f32, GGML_F16: f16, GGML_Q8_0: q8_0, GGML_Q4_0: q4_0, GGML_Q4_K: q4_k, GGML_Q6_K: q6_k}


def requantize_asym4(w, block=32):
    """What the builder's quantizer makes of float weights as asymmetric 4-bit MatMulNBits blocks
    (ONNX Runtime's MLAS round-to-nearest, float32 arithmetic), dequantized: the reference for Q4_K
    weights, which the builder requantizes so (their minimum is no integer zero point)."""
    rows, k = w.shape
    x = w.reshape(rows, k // block, block).astype(np.float32)
    lo = np.minimum(x.min(-1), np.float32(0))
    hi = np.maximum(x.max(-1), np.float32(0))
    scale = ((hi - lo) / np.float32(15)).astype(np.float32)
    safe = np.where(scale != 0, scale, np.float32(1))
    zp_fp = np.where(scale != 0, -lo / safe, np.float32(0)).astype(np.float32)
    zp = np.where(zp_fp < 0, 0, np.where(zp_fp > 15, 15, np.floor(zp_fp + np.float32(0.5)))).astype(np.float32)
    inv = np.where(scale != 0, np.float32(1) / safe, np.float32(0)).astype(np.float32)
    y = (x * inv[..., None] + zp[..., None]).astype(np.float32)
    y = np.where(y >= 0, np.minimum(y, np.float32(15)), np.float32(0))
    whole = np.floor(y)
    q = whole + ((y - whole) >= np.float32(0.5))
    return (scale[..., None] * (q - zp[..., None]).astype(np.float32)).astype(np.float32).reshape(rows, k)


def hf_to_meta_rows(w, n_heads):
    """llama.cpp's q/k row order (interleaved rotary) from Hugging Face's (rotate_half)."""
    hd = w.shape[0] // n_heads
    return np.ascontiguousarray(w.reshape(n_heads, 2, hd // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))
