/* rlx plugin ABI — the only header a plugin must see.
 *
 * Pure C (stdint/stddef/stdbool only): opaque handles and tables of function pointers. No STL,
 * no exceptions and no C++ classes cross this boundary. A plugin exports exactly one symbol,
 *
 *     const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major);
 *
 * and the host checks the returned header (abi_major, struct_size, name) before it calls anything
 * else. Rules for evolving it:
 *   - adding a field at the end of a struct, or an op at the end of ops.def, bumps ABI_MINOR;
 *     every struct starts with (or carries) its struct_size so either side can tell what the
 *     other was built with;
 *   - anything else bumps ABI_MAJOR, and the host refuses plugins of another major.
 * Every call that can fail returns rlx_status and fills a caller-owned message buffer
 * (rlx_err: pointer + capacity) with one line saying what went wrong.
 *
 * Contracts a backend can rely on, and must keep:
 *   - rlx_plugin_query returns its header whatever host_abi_major says, so the host can name both
 *     versions when it refuses the plugin; a plugin that cannot serve that host says so in init.
 *   - Structs the host passes for the plugin to fill (rlx_device_info) carry the host's
 *     struct_size: write at most that many bytes.
 *   - supports() judges op, dtypes, shapes and attributes; placement is checked by compile.
 *   - One program is run by one host thread at a time; different programs on one device may be
 *     run from different threads (the backend allows that or serializes internally).
 *   - shutdown() is the last call: it joins every thread the plugin started, because the host
 *     unmaps the library right after.
 */
#ifndef RLX_PLUGIN_ABI_H
#define RLX_PLUGIN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_ABI_MAJOR 1
#define RLX_ABI_MINOR 0

#define RLX_QUERY_SYMBOL "rlx_plugin_query"
#define RLX_MAX_DIMS 4
#define RLX_MAX_INPUTS 4
#define RLX_MAX_ATTRS 8

#if defined(_WIN32)
#define RLX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define RLX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- status and errors ------------------------------------------------------------------ */

typedef enum rlx_status {
  RLX_OK = 0,
  RLX_ERR_UNSUPPORTED = 1, /* the op / dtype / feature is not implemented here */
  RLX_ERR_INVALID = 2,     /* bad argument: shape, index, handle */
  RLX_ERR_NO_DEVICE = 3,   /* no usable device (driver missing, none present) */
  RLX_ERR_OUT_OF_MEMORY = 4,
  RLX_ERR_INTERNAL = 5
} rlx_status;

/* A message buffer owned by the caller. The callee writes one NUL-terminated line. */
typedef struct rlx_err {
  char* msg;
  size_t cap;
} rlx_err;

/* ---- dtypes ----------------------------------------------------------------------------- */

/* Quantized ids are reserved now so the numbering never changes; block layouts follow GGUF. */
typedef enum rlx_dtype {
  RLX_F32 = 0,
  RLX_F16 = 1,
  RLX_BF16 = 2,
  RLX_I32 = 3,
  RLX_I8 = 4,
  RLX_Q4_0 = 16,
  RLX_Q4_1 = 17,
  RLX_Q5_0 = 18,
  RLX_Q5_1 = 19,
  RLX_Q8_0 = 20,
  RLX_Q2_K = 21,
  RLX_Q3_K = 22,
  RLX_Q4_K = 23,
  RLX_Q5_K = 24,
  RLX_Q6_K = 25,
  RLX_Q8_K = 26
} rlx_dtype;

/* ---- ops -------------------------------------------------------------------------------- */

/* How an op's output storage relates to its input 0 (the last column of ops.def). */
typedef enum rlx_op_alias {
  RLX_ALIAS_NONE = 0,    /* its own storage */
  RLX_ALIAS_INPLACE = 1, /* may share input 0's storage when input 0 dies there */
  RLX_ALIAS_VIEW = 2,    /* is input 0's storage at an offset: no compute */
  RLX_ALIAS_UPDATE = 3   /* is input 0's storage, modified by the node (may be a slot) */
} rlx_op_alias;

/* Built-in op ids, from ops.def (semantics are documented there). Ops registered at run time by
 * plugins get ids from RLX_OP_CUSTOM_BASE up and are matched by name. */
typedef enum rlx_op {
#define RLX_OP(id, name, min_in, max_in, alias) RLX_OP_##id,
#include "rlx/ops.def"
#undef RLX_OP
  RLX_OP_BUILTIN_COUNT,
  RLX_OP_CUSTOM_BASE = 1024
} rlx_op;

/* ---- graphs as a backend sees them ------------------------------------------------------ */

typedef enum rlx_storage {
  RLX_STORAGE_ARENA = 0, /* lives in the program's activation arena at `offset` */
  RLX_STORAGE_SLOT = 1   /* bound at run time: slot `slot` (+ `offset` bytes, for views) */
} rlx_storage;

typedef struct rlx_tensor_desc {
  uint32_t dtype; /* rlx_dtype */
  uint32_t ndim;
  int64_t shape[RLX_MAX_DIMS];
  uint32_t storage; /* rlx_storage */
  uint32_t slot;
  uint64_t offset; /* bytes from the start of the arena or of the slot's binding */
  uint64_t nbytes;
} rlx_tensor_desc;

typedef struct rlx_node_desc {
  uint32_t op;         /* rlx_op, or a custom id */
  const char* op_name; /* always set; custom ops are matched by this */
  uint32_t n_inputs;
  uint32_t inputs[RLX_MAX_INPUTS]; /* tensor indices */
  uint32_t output;                 /* tensor index */
  int64_t iattr[RLX_MAX_ATTRS];
  float fattr[RLX_MAX_ATTRS];
} rlx_node_desc;

/* A planned graph: nodes in execution order, every tensor placed. Valid only during the call it
 * is passed to; a backend copies what it keeps. */
typedef struct rlx_graph_desc {
  uint32_t struct_size;
  uint32_t n_tensors;
  const rlx_tensor_desc* tensors;
  uint32_t n_nodes;
  const rlx_node_desc* nodes;
  uint32_t n_slots;
  uint64_t arena_bytes;
  uint64_t arena_alignment;
} rlx_graph_desc;

/* ---- devices and buffers ---------------------------------------------------------------- */

typedef struct rlx_device rlx_device;   /* opaque, owned by the backend */
typedef struct rlx_buffer rlx_buffer;   /* opaque device memory */
typedef struct rlx_program rlx_program; /* opaque compiled graph */

typedef enum rlx_device_type {
  RLX_DEVICE_CPU = 0,
  RLX_DEVICE_INTEGRATED_GPU = 1,
  RLX_DEVICE_DISCRETE_GPU = 2,
  RLX_DEVICE_VIRTUAL = 3,
  RLX_DEVICE_OTHER = 4
} rlx_device_type;

typedef struct rlx_device_info {
  uint32_t struct_size;
  uint32_t type;          /* rlx_device_type */
  char name[128];         /* "AMD EPYC (avx512)", "NVIDIA H200", ... */
  char driver[64];        /* driver / runtime name and version, "" if none */
  uint64_t memory_total;  /* bytes the backend can allocate (0 = unknown) */
  uint64_t memory_free;   /* bytes free now (0 = unknown) */
  char capabilities[256]; /* space-separated tags: "f32 f16 threads=2 avx2 fma" */
  uint64_t reserved[8];
} rlx_device_info;

typedef struct rlx_device_options {
  uint32_t struct_size;
  uint32_t n_threads; /* host threads the backend may use; 0 = its default */
  uint64_t reserved[8];
} rlx_device_options;

/* One run-time binding: the buffer that backs a graph slot, and a byte offset into it. */
typedef struct rlx_binding {
  rlx_buffer* buffer;
  uint64_t offset;
} rlx_binding;

/* ---- what the host offers a plugin ------------------------------------------------------ */

typedef enum rlx_log_level {
  RLX_LOG_TRACE = 0,
  RLX_LOG_DEBUG = 1,
  RLX_LOG_INFO = 2,
  RLX_LOG_WARN = 3,
  RLX_LOG_ERROR = 4
} rlx_log_level;

/* Shape/dtype inference for a plugin's own op: fill out->dtype, out->ndim and out->shape from
 * the inputs (only dtype/ndim/shape are set on them) and the attributes, or return an error with
 * one line about the inputs in `err`. */
typedef rlx_status (*rlx_infer_fn)(const rlx_tensor_desc* inputs, uint32_t n_inputs,
                                   const int64_t* iattr, const float* fattr, rlx_tensor_desc* out,
                                   rlx_err err);

/* An extra op a plugin adds to the registry (see rlx_host_api.register_op). */
typedef struct rlx_op_decl {
  uint32_t struct_size;
  const char* name; /* process-wide unique, [a-z0-9_.]; prefix it: "mybackend.fused_qkv" */
  uint32_t min_inputs;
  uint32_t max_inputs; /* <= RLX_MAX_INPUTS */
  bool inplace;        /* output may reuse input 0's storage */
  rlx_infer_fn infer;
  uint64_t reserved[4];
} rlx_op_decl;

typedef struct rlx_host_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  /* Log one line through the host's logger. `plugin` is the plugin's name. */
  void (*log)(int level, const char* plugin, const char* message);
  /* Adds a named op to the core's registry and returns its id (>= RLX_OP_CUSTOM_BASE). Only
   * valid during init(); the op is removed again when the plugin is unloaded. */
  rlx_status (*register_op)(const rlx_op_decl* decl, uint32_t* out_id, rlx_err err);
  uint64_t reserved[8];
} rlx_host_api;

/* ---- backend table ---------------------------------------------------------------------- */

typedef struct rlx_backend_api {
  uint32_t struct_size;

  /* Called once after the header checks. The host pointer stays valid until shutdown. */
  rlx_status (*init)(const rlx_host_api* host, rlx_err err);
  /* Stop every thread and free everything; the host unloads the library right after. */
  void (*shutdown)(void);

  /* The probe. 0 devices with RLX_OK is "no device here"; an error status explains why not. */
  rlx_status (*device_count)(uint32_t* count, rlx_err err);
  rlx_status (*device_info)(uint32_t index, rlx_device_info* out, rlx_err err);
  rlx_status (*device_open)(uint32_t index, const rlx_device_options* opts, rlx_device** out,
                            rlx_err err);
  void (*device_close)(rlx_device* dev);

  rlx_status (*buffer_alloc)(rlx_device* dev, uint64_t bytes, rlx_buffer** out, rlx_err err);
  void (*buffer_free)(rlx_device* dev, rlx_buffer* buf);
  rlx_status (*buffer_write)(rlx_device* dev, rlx_buffer* buf, uint64_t offset, const void* src,
                             uint64_t bytes, rlx_err err);
  rlx_status (*buffer_read)(rlx_device* dev, rlx_buffer* buf, uint64_t offset, void* dst,
                            uint64_t bytes, rlx_err err);

  /* Can this backend run node `node` of `graph` (op, dtypes, shapes, attributes)? The host
   * runs every node answered false on the cpu backend, with a warning per op kind, and compiles
   * the rest into programs of their own (so a graph handed to program_compile holds only nodes
   * answered true). */
  bool (*supports)(rlx_device* dev, const rlx_graph_desc* graph, uint32_t node);
  /* Compile a planned graph into a program that owns its arena. */
  rlx_status (*program_compile)(rlx_device* dev, const rlx_graph_desc* graph, rlx_program** out,
                                rlx_err err);
  /* Run it once; bindings[i] backs slot i (n_bindings == graph n_slots). Synchronous. */
  rlx_status (*program_run)(rlx_device* dev, rlx_program* prog, const rlx_binding* bindings,
                            uint32_t n_bindings, rlx_err err);
  void (*program_free)(rlx_device* dev, rlx_program* prog);

  /* Optional (NULL = not supported): a read-only buffer over host memory the host owns, without
   * a copy (weights straight from an mmap'd file). `ptr` stays valid and unchanged until
   * buffer_free; any alignment may be passed (a backend that needs more refuses, and the host
   * then copies). The host binds it only to slots the program reads. */
  rlx_status (*buffer_from_host)(rlx_device* dev, const void* ptr, uint64_t bytes, rlx_buffer** out,
                                 rlx_err err);

  uint64_t reserved[8];
} rlx_backend_api;

/* ---- model-family plugins --------------------------------------------------------------- */

typedef uint32_t rlx_tensor_id;

/* What a model plugin reads: the weight file's metadata (GGUF key/values, or an HF config.json
 * flattened to dotted keys such as "rope_scaling.factor") and its tensor table. Strings and
 * arrays returned are valid until the load call returns. */
typedef struct rlx_model_source {
  uint32_t struct_size;
  void* ctx;
  const char* format; /* "gguf" or "safetensors" */
  bool (*get_int)(void* ctx, const char* key, int64_t* out);
  bool (*get_float)(void* ctx, const char* key, double* out);
  bool (*get_string)(void* ctx, const char* key, const char** out);
  /* Array length, and element i as a number (integers and floats alike). */
  bool (*get_array_len)(void* ctx, const char* key, uint64_t* out);
  bool (*get_array_float)(void* ctx, const char* key, uint64_t i, double* out);
  /* A tensor in the file by its file name: dtype and shape (outermost dim first). */
  bool (*tensor_info)(void* ctx, const char* name, uint32_t* dtype, uint32_t* ndim,
                      int64_t shape[RLX_MAX_DIMS]);
  uint64_t reserved[8];
} rlx_model_source;

/* Hyper-parameters a model plugin reports; the generator and the CLI read these. */
typedef struct rlx_model_config {
  uint32_t struct_size;
  char architecture[32]; /* "llama", "qwen3" */
  int64_t vocab_size;
  int64_t dim;
  int64_t n_layers;
  int64_t n_heads;
  int64_t n_kv_heads;
  int64_t head_dim;
  int64_t ffn_dim;
  int64_t max_seq; /* trained context length */
  int64_t bos_id;  /* -1 when unknown */
  int64_t eos_id;  /* -1 when unknown */
  float rope_theta;
  float norm_eps;
  uint64_t reserved[8];
} rlx_model_config;

/* The graph builder the core hands a model plugin. Every call validates through the core's op
 * registry; a failure fills `err` (naming the op, node and shapes) and returns non-OK. */
typedef struct rlx_graph_builder {
  uint32_t struct_size;
  void* ctx;
  rlx_status (*input)(void* ctx, const char* name, uint32_t dtype, uint32_t ndim,
                      const int64_t* shape, rlx_tensor_id* out, rlx_err err);
  /* A tensor of the weight file, by its file name; uploaded once per device and shared. */
  rlx_status (*weight)(void* ctx, const char* file_name, rlx_tensor_id* out, rlx_err err);
  /* A small tensor the plugin computes (rope frequency factors): copied by the core. */
  rlx_status (*constant)(void* ctx, const char* name, uint32_t dtype, uint32_t ndim,
                         const int64_t* shape, const void* data, rlx_tensor_id* out, rlx_err err);
  /* out_shape/out_ndim: the target of a reshape (NULL/0 otherwise). node_name may be NULL. */
  rlx_status (*op)(void* ctx, const char* op_name, const rlx_tensor_id* inputs, uint32_t n_inputs,
                   const int64_t* iattr, const float* fattr, const int64_t* out_shape,
                   uint32_t out_ndim, const char* node_name, rlx_tensor_id* out, rlx_err err);
  rlx_status (*output)(void* ctx, rlx_tensor_id t, const char* name, rlx_err err);
  /* dtype and shape of a tensor already in the graph. */
  rlx_status (*info)(void* ctx, rlx_tensor_id t, uint32_t* dtype, uint32_t* ndim,
                     int64_t shape[RLX_MAX_DIMS], rlx_err err);
  uint64_t reserved[8];
} rlx_graph_builder;

typedef enum rlx_logits_mode {
  RLX_LOGITS_LAST = 0, /* "logits" f32[1, vocab] for the last row */
  RLX_LOGITS_ALL = 1,  /* "logits" f32[seq, vocab] */
  RLX_LOGITS_NONE = 2, /* "hidden" f32[1, dim]: the final-normed last row (host-side lm_head) */
  RLX_LOGITS_HEAD = 3  /* only the head: input "hidden" f32[seq, dim] -> "logits" [seq, vocab] */
} rlx_logits_mode;

/* What one forward graph computes. Inputs the plugin must declare, in this order:
 *   "ids" i32[seq], "pos" i32[seq] (absolute positions), then per layer L
 *   "k_cache.L" and "v_cache.L" f32[cache_capacity, n_kv_heads, head_dim]
 * (RLX_LOGITS_HEAD graphs declare only "hidden"). The graph writes the new rows into the caches
 * (kv_store) and attends over them by position. */
typedef struct rlx_forward_params {
  uint32_t struct_size;
  int64_t seq;
  int64_t cache_capacity;
  uint32_t logits; /* rlx_logits_mode */
  uint64_t reserved[8];
} rlx_forward_params;

typedef struct rlx_model rlx_model; /* opaque, owned by the model plugin */

typedef struct rlx_model_api {
  uint32_t struct_size;
  rlx_status (*init)(const rlx_host_api* host, rlx_err err);
  void (*shutdown)(void);
  /* NULL-terminated lists of GGUF general.architecture values and HF model_type strings. */
  const char* const* gguf_architectures;
  const char* const* hf_model_types;
  /* Read the hyper-parameters and check the tensors; errors name the key or tensor. */
  rlx_status (*load)(const rlx_model_source* src, rlx_model** out, rlx_model_config* config,
                     rlx_err err);
  void (*free)(rlx_model* model);
  rlx_status (*build_forward)(rlx_model* model, const rlx_graph_builder* gb,
                              const rlx_forward_params* params, rlx_err err);
  uint64_t reserved[8];
} rlx_model_api;

/* ---- the plugin header ------------------------------------------------------------------ */

typedef enum rlx_plugin_kind { RLX_PLUGIN_BACKEND = 1, RLX_PLUGIN_MODEL = 2 } rlx_plugin_kind;

typedef struct rlx_plugin_info {
  uint32_t abi_major;   /* RLX_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor;   /* RLX_ABI_MINOR the plugin was built against */
  uint32_t struct_size; /* sizeof(rlx_plugin_info) as the plugin was built */
  uint32_t kind;        /* rlx_plugin_kind */
  const char* name;     /* "cpu", "vulkan", "llama32": what --device / the model lookup use */
  const char* variant;  /* build variant: "avx2", "avx512", "sm90", "" for none */
  const char* version;  /* the plugin's own version, "0.1.0" */
  const char* description;
  /* Optional (NULL = 1): how well this build fits this machine; 0 = cannot run here. Among
   * plugins of one name the host keeps the highest score. Must be cheap and side-effect free. */
  uint32_t (*score)(void);
  /* kind == RLX_PLUGIN_BACKEND: const rlx_backend_api*; RLX_PLUGIN_MODEL: const rlx_model_api* */
  const void* api;
  uint64_t reserved[8];
} rlx_plugin_info;

typedef const rlx_plugin_info* (*rlx_plugin_query_fn)(uint32_t host_abi_major);

#ifdef __cplusplus
}
#endif

#endif /* RLX_PLUGIN_ABI_H */
