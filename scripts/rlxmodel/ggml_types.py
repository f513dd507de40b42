"""ggml tensor types: id, elements per block, bytes per block (ggml-common.h / ggml.h)."""

QK_K = 256  # super-block size of the k-quants

# name: (ggml_type id, block elements, block bytes)
GGML_TYPES = {
    "f32":  (0, 1, 4),
    "f16":  (1, 1, 2),
    "q4_0": (2, 32, 18),    # f16 d; u8 qs[16]
    "q4_1": (3, 32, 20),    # f16 d, f16 m; u8 qs[16]
    "q5_0": (6, 32, 22),    # f16 d; u8 qh[4]; u8 qs[16]
    "q5_1": (7, 32, 24),    # f16 d, f16 m; u8 qh[4]; u8 qs[16]
    "q8_0": (8, 32, 34),    # f16 d; i8 qs[32]
    "q2_k": (10, 256, 84),  # u8 scales[16]; u8 qs[64]; f16 d, f16 dmin
    "q3_k": (11, 256, 110), # u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d
    "q4_k": (12, 256, 144), # f16 d, f16 dmin; u8 scales[12]; u8 qs[128]
    "q5_k": (13, 256, 176), # f16 d, f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
    "q6_k": (14, 256, 210), # u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d
    "bf16": (30, 1, 2),
}

TYPE_BY_ID = {v[0]: k for k, v in GGML_TYPES.items()}

# llama_ftype written to general.file_type ("mostly" type of the 2-D weights)
LLAMA_FTYPE = {
    "f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9,
    "q2_k": 10, "q3_k": 11, "q4_k": 14, "q5_k": 16, "q6_k": 18, "bf16": 32,
}


def block_size(tname):
    return GGML_TYPES[tname][1]


def row_bytes(tname, ne0):
    _, bs, bb = GGML_TYPES[tname]
    if ne0 % bs:
        raise ValueError(f"row length {ne0} is not a multiple of the {tname} block size {bs}")
    return ne0 // bs * bb
