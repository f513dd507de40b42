// The emulator's implementation: fibers and the block scheduler (barriers, warp collectives,
// deadlock detection), then the runtime API (devices, memory, streams, capture and graphs),
// then f16 conversions. See emu.h for the model and README.md for the limits.
#include "emu.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#if defined(__x86_64__) && !defined(RLX_EMU_UCONTEXT)
#include <xmmintrin.h>
#define EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

#pragma weak dladdr  // only for naming kernels in messages; absent (older glibc without -ldl): skipped

namespace emu {

Current g_current;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "rlx gpu emulator: %s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

// ---- context switching ----------------------------------------------------------------------
#if defined(EMU_ASM_SWITCH)
// x86-64 SysV: save the callee-saved registers, mxcsr and the x87 control word on the old
// stack, store its stack pointer in *from, load `to`, restore, return into the other context.
// A fresh context "returns" into rlx_emu_entry, which calls r13(r12).
extern "C" void rlx_emu_switch(void** from, void* to);
extern "C" void rlx_emu_entry();
asm(R"(
  .text
  .globl rlx_emu_switch
  .hidden rlx_emu_switch
  .type rlx_emu_switch, @function
rlx_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size rlx_emu_switch, .-rlx_emu_switch

  .globl rlx_emu_entry
  .hidden rlx_emu_entry
  .type rlx_emu_entry, @function
rlx_emu_entry:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size rlx_emu_entry, .-rlx_emu_entry
)");

struct Context {
  void* sp = nullptr;
};
inline void switch_context(Context& from, Context& to) { rlx_emu_switch(&from.sp, to.sp); }
void make_context(Context& c, char* stack, size_t size, void (*fn)(void*), void* arg) {
  auto top = reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t{15};
  auto* s = reinterpret_cast<uint64_t*>(top - 80);  // see the frame rlx_emu_switch pops
  uint16_t fcw;
  asm volatile("fnstcw %0" : "=m"(fcw));
  s[0] = uint64_t{_mm_getcsr()} | (uint64_t{fcw} << 32);
  s[1] = 0;                                        // r15
  s[2] = 0;                                        // r14
  s[3] = reinterpret_cast<uint64_t>(fn);           // r13
  s[4] = reinterpret_cast<uint64_t>(arg);          // r12
  s[5] = 0;                                        // rbx
  s[6] = 0;                                        // rbp
  s[7] = reinterpret_cast<uint64_t>(&rlx_emu_entry);  // return address; then rsp = top - 16
  c.sp = s;
}
#else
// Portable fallback: ucontext (slower: a signal-mask syscall per switch).
struct Context {
  ucontext_t uc;
};
inline void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
void (*g_uc_fn)(void*);
void uc_entry(unsigned hi, unsigned lo) {
  g_uc_fn(reinterpret_cast<void*>((uintptr_t{hi} << 32) | lo));
}
void make_context(Context& c, char* stack, size_t size, void (*fn)(void*), void* arg) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  g_uc_fn = fn;
  auto a = reinterpret_cast<uintptr_t>(arg);
  makecontext(&c.uc, reinterpret_cast<void (*)()>(uc_entry), 2, unsigned(uint64_t(a) >> 32),
              unsigned(a & 0xffffffffu));
}
#endif

// AddressSanitizer keeps one stack per thread: it is told each time a switch moves to another
// (scripts/sanitize.sh), or it takes fiber stacks for overflows of the thread's own.
// leave(save, to_bottom, to_size) before a switch (save = nullptr: this fiber never resumes);
// arrived(save, from_bottom, from_size) right after one (where execution continues).
#if EMU_ASAN
inline void asan_leave(void** save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(save, bottom, size);
}
inline void asan_arrived(void* save, const void** bottom, size_t* size) {
  __sanitizer_finish_switch_fiber(save, bottom, size);
}
constexpr size_t kDefaultStackKb = 512;  // instrumented frames are larger
#else
inline void asan_leave(void**, const void*, size_t) {}
inline void asan_arrived(void*, const void**, size_t*) {}
constexpr size_t kDefaultStackKb = 64;
#endif

// ---- stacks ---------------------------------------------------------------------------------
// mmap'ed once and reused; a PROT_NONE page below each turns an overflow into SIGSEGV.
size_t stack_bytes() {
  static const size_t n = [] {
    const char* e = std::getenv("RLX_EMU_STACK_KB");
    size_t kb = e ? std::strtoul(e, nullptr, 10) : 0;
    return (kb ? kb : kDefaultStackKb) * 1024;
  }();
  return n;
}
std::vector<char*> g_stacks;
char* stack(size_t i) {
  while (g_stacks.size() <= i) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t size = (stack_bytes() + page - 1) / page * page;
    void* p = mmap(nullptr, size + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) die("cannot map a fiber stack");
    mprotect(p, page, PROT_NONE);
    g_stacks.push_back(static_cast<char*>(p) + page);
  }
  return g_stacks[i];
}

// ---- the block scheduler --------------------------------------------------------------------
struct Barrier {
  unsigned live = 0, arrived = 0, gen = 0;
};

enum class Wait { none, block, warp };

struct Fiber {
  Context ctx;
  char* stack = nullptr;  // its stack's lowest address, and stack_bytes() from there
  void* asan_save = nullptr;
  dim3 tid;
  unsigned linear = 0;
  bool done = false;
  Wait wait = Wait::none;
  const Barrier* barrier = nullptr;  // while waiting: released when its gen != wait_gen
  unsigned wait_gen = 0;
  const char* file = "";
  int line = 0;
};

struct Warp {
  Barrier bar;
  uint32_t live = 0;  // lanes still running
  std::array<uint64_t, 32> slot{};
};

// The block being run (launches are serialized by g_launch_mu).
struct Run {
  const KernelOp* op = nullptr;
  unsigned long long number = 0;  // launches so far
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Barrier block;
  Fiber* cur = nullptr;  // the running fiber; null in the scheduler
  Context sched;
  const void* sched_stack = nullptr;  // the scheduler's stack, as ASan reports it
  size_t sched_stack_size = 0;
  void* sched_asan_save = nullptr;
};
Run g_run;
std::mutex g_launch_mu;
thread_local bool t_in_launch = false;  // this OS thread runs a launch (maybe in a kernel)

Fiber& self(const char* what) {
  if (!g_run.cur) die(std::string(what) + " called outside a kernel");
  return *g_run.cur;
}

void yield(Fiber& f, bool exiting = false) {
  asan_leave(exiting ? nullptr : &f.asan_save, g_run.sched_stack, g_run.sched_stack_size);
  switch_context(f.ctx, g_run.sched);
  asan_arrived(f.asan_save, &g_run.sched_stack, &g_run.sched_stack_size);
}

void release_if_complete(Barrier& b) {
  if (b.arrived > 0 && b.arrived >= b.live) {
    b.arrived = 0;
    ++b.gen;
  }
}

void arrive(Barrier& b, Wait kind, const char* file, int line) {
  Fiber& f = *g_run.cur;
  if (++b.arrived >= b.live) {  // the last one releases the others and goes on
    b.arrived = 0;
    ++b.gen;
    return;
  }
  f.wait = kind;
  f.barrier = &b;
  f.wait_gen = b.gen;
  f.file = file;
  f.line = line;
  yield(f);
}

void fiber_main(void* arg) {
  asan_arrived(nullptr, &g_run.sched_stack, &g_run.sched_stack_size);
  auto& f = *static_cast<Fiber*>(arg);
  try {
    g_run.op->invoke();
  } catch (const std::exception& e) {
    die(std::string("exception thrown in a kernel: ") + e.what());
  } catch (...) {
    die("exception thrown in a kernel");
  }
  // Exited threads count as arrived at any barrier.
  f.done = true;
  Warp& w = g_run.warps[f.linear / 32];
  w.live &= ~(1u << (f.linear % 32));
  w.slot[f.linear % 32] = 0;
  --w.bar.live;
  release_if_complete(w.bar);
  --g_run.block.live;
  release_if_complete(g_run.block);
  yield(f, /*exiting=*/true);
  die("a finished fiber was resumed");
}

std::string kernel_name(const KernelOp& op) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%p", op.kernel);
  std::string name = buf;
  Dl_info info{};
  if (&dladdr != nullptr && dladdr(op.kernel, &info) && info.dli_sname &&
      info.dli_saddr == op.kernel) {
    int st = 0;
    char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st);
    name = std::string(st == 0 && d ? d : info.dli_sname) + " (" + buf + ")";
    std::free(d);
  }
  return name;
}

std::string str(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

[[noreturn]] void deadlock(dim3 block_idx) {
  const KernelOp& op = *g_run.op;
  std::string m = "deadlock in kernel launch #" + std::to_string(g_run.number) + " " +
                  kernel_name(op) + " grid " + str(op.grid) + " block " + str(op.block) +
                  ", in block " + str(block_idx) + "\n  launched as: " + op.signature +
                  "\n  every running thread waits at a barrier that cannot complete:";
  // Group the waiting threads by where they wait.
  std::map<std::string, std::pair<int, unsigned>> where;  // -> count, first thread
  unsigned exited = 0;
  for (auto& f : g_run.fibers) {
    if (f.done) { ++exited; continue; }
    std::string k = std::string(f.wait == Wait::block ? "__syncthreads" : "warp collective") +
                    " at " + f.file + ":" + std::to_string(f.line);
    auto [it, fresh] = where.try_emplace(k, 0, f.linear);
    (void)fresh;
    ++it->second.first;
  }
  for (auto& [k, v] : where)
    m += "\n    " + std::to_string(v.first) + " thread(s) at " + k + " (first: thread " +
         str(g_run.fibers[v.second].tid) + ")";
  m += "\n    " + std::to_string(exited) + " thread(s) exited";
  die(m);
}

void run_block(dim3 block_idx) {
  const dim3 bd = g_run.op->block;
  const unsigned n = bd.x * bd.y * bd.z;
  g_current.block_idx = block_idx;
  g_run.block = Barrier{n, 0, 0};
  g_run.warps.assign((n + 31) / 32, Warp{});
  for (unsigned w = 0; w < g_run.warps.size(); ++w) {
    unsigned lanes = std::min(32u, n - w * 32);
    g_run.warps[w].bar.live = lanes;
    g_run.warps[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  }
  g_run.fibers.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = g_run.fibers[i];
    f = Fiber{};
    f.linear = i;
    f.tid = dim3(i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y));
    f.stack = stack(i);
    make_context(f.ctx, f.stack, stack_bytes(), fiber_main, &f);
  }
  // Round robin: run every thread that can go until it waits or exits.
  unsigned done = 0;
  while (done < n) {
    bool ran = false;
    for (auto& f : g_run.fibers) {
      if (f.done) continue;
      if (f.barrier && f.barrier->gen == f.wait_gen) continue;  // still waiting
      f.barrier = nullptr;
      f.wait = Wait::none;
      g_current.thread_idx = f.tid;
      g_run.cur = &f;
      asan_leave(&g_run.sched_asan_save, f.stack, stack_bytes());
      switch_context(g_run.sched, f.ctx);
      asan_arrived(g_run.sched_asan_save, nullptr, nullptr);
      g_run.cur = nullptr;
      ran = true;
      if (f.done) ++done;
    }
    if (!ran) deadlock(block_idx);
  }
}

bool config_ok(dim3 g, dim3 b) {
  uint64_t threads = uint64_t{b.x} * b.y * b.z;
  return g.x >= 1 && g.y >= 1 && g.z >= 1 && g.x <= 0x7fffffffu && g.y <= 65535 &&
         g.z <= 65535 && b.x >= 1 && b.y >= 1 && b.z >= 1 && b.x <= 1024 && b.y <= 1024 &&
         b.z <= 64 && threads <= 1024;
}

}  // namespace

void KernelOp::run() const {
  if (t_in_launch) die("kernel launched from device code (dynamic parallelism is not emulated)");
  std::lock_guard lock(g_launch_mu);
  t_in_launch = true;
  g_run.op = this;
  ++g_run.number;
  g_current.grid_dim = grid;
  g_current.block_dim = block;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) run_block(dim3(x, y, z));
  g_run.op = nullptr;
  t_in_launch = false;
}

namespace detail {

int lane() { return static_cast<int>(self("a warp function").linear % 32); }

uint32_t live_mask() {
  Fiber& f = self("__activemask");
  return g_run.warps[f.linear / 32].live;
}

void block_barrier(const char* file, int line) {
  self("__syncthreads");
  arrive(g_run.block, Wait::block, file, line);
}

void warp_barrier(const char* file, int line) {
  Fiber& f = self("__syncwarp");
  arrive(g_run.warps[f.linear / 32].bar, Wait::warp, file, line);
}

// Write the own slot, wait for the warp, read the source's slot, wait again (so no lane
// overwrites its slot before all have read).
uint64_t warp_exchange(uint64_t bits, int src, const char* file, int line) {
  Fiber& f = self("a warp shuffle");
  Warp& w = g_run.warps[f.linear / 32];
  const int l = static_cast<int>(f.linear % 32);
  w.slot[l] = bits;
  arrive(w.bar, Wait::warp, file, line);
  uint64_t v = src >= 0 && src < 32 ? w.slot[src] : bits;
  arrive(w.bar, Wait::warp, file, line);
  return v;
}

uint32_t warp_vote(bool pred, uint32_t* live, const char* file, int line) {
  Fiber& f = self("a warp vote");
  Warp& w = g_run.warps[f.linear / 32];
  w.slot[f.linear % 32] = pred;
  arrive(w.bar, Wait::warp, file, line);
  uint32_t b = 0;
  for (int i = 0; i < 32; ++i) b |= (w.slot[i] ? 1u : 0u) << i;
  *live = w.live;
  arrive(w.bar, Wait::warp, file, line);
  return b;
}

}  // namespace detail
}  // namespace emu

// ---- runtime: errors and the device ---------------------------------------------------------
namespace {

thread_local cudaError_t g_last = cudaSuccess;

cudaError_t fail(cudaError_t e) {
  g_last = e;
  return e;
}

size_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t{8} << 30;
}

}  // namespace

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return g_last; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p) return fail(cudaErrorInvalidValue);
  if (device != 0) return fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "rlx GPU emulator (CPU)");
  p->totalGlobalMem = physical_memory();
  p->sharedMemPerBlock = 48 * 1024;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 4;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

// ---- runtime: memory ------------------------------------------------------------------------
namespace {

std::mutex g_mu;                       // allocations, streams, graphs
std::map<uintptr_t, size_t> g_device;  // cudaMalloc: start -> bytes
std::map<uintptr_t, size_t> g_pinned;  // cudaMallocHost
size_t g_device_bytes = 0;

bool in(const std::map<uintptr_t, size_t>& m, const void* p, size_t n) {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  return a - it->first <= it->second && n <= it->second - (a - it->first);
}

// Memory a device operation may touch: [p, p + n) inside one device or pinned allocation.
bool device_ok(const void* p, size_t n) {
  std::lock_guard lock(g_mu);
  return in(g_device, p, n) || in(g_pinned, p, n);
}

void* allocate(size_t bytes) {
  size_t n = (bytes + 255) / 256 * 256;
  return std::aligned_alloc(256, n);
}

}  // namespace

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = allocate(bytes);
  if (!p) return fail(cudaErrorMemoryAllocation);
  std::memset(p, 0xff, bytes);  // NaN everywhere: reads of uninitialized memory show
  std::lock_guard lock(g_mu);
  g_device[reinterpret_cast<uintptr_t>(p)] = bytes;
  g_device_bytes += bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::lock_guard lock(g_mu);
  auto it = g_device.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_device.end()) return fail(cudaErrorInvalidValue);
  g_device_bytes -= it->second;
  g_device.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  void* p = allocate(bytes ? bytes : 1);
  if (!p) return fail(cudaErrorMemoryAllocation);
  std::lock_guard lock(g_mu);
  g_pinned[reinterpret_cast<uintptr_t>(p)] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::lock_guard lock(g_mu);
  auto it = g_pinned.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_pinned.end()) return fail(cudaErrorInvalidValue);
  g_pinned.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(g_mu);
  *total = physical_memory();
  *free = *total > g_device_bytes ? *total - g_device_bytes : 0;
  return cudaSuccess;
}

// ---- runtime: streams, capture, graphs ------------------------------------------------------
using OpList = std::vector<std::shared_ptr<const emu::Op>>;

struct CUstream_st {
  unsigned flags = 0;
  cudaGraph_t capture = nullptr;  // non-null while capturing
  bool invalidated = false;       // the capture hit an illegal call (as CUDA: it fails at the end)
};
struct CUgraph_st {
  OpList ops;
};
struct CUgraphExec_st {
  OpList ops;
};

namespace {

std::set<const void*> g_handles;  // live streams, graphs and graph execs
int g_capturing = 0;              // streams capturing now

bool live(const void* h) { return g_handles.count(h) != 0; }

struct CopyOp final : emu::Op {
  void* dst;
  const void* src;
  size_t n;
  CopyOp(void* d, const void* s, size_t b) : dst(d), src(s), n(b) {}
  void run() const override { std::memmove(dst, src, n); }
};

struct SetOp final : emu::Op {
  void* dst;
  int value;
  size_t n;
  SetOp(void* d, int v, size_t b) : dst(d), value(v), n(b) {}
  void run() const override { std::memset(dst, value, n); }
};

struct GraphOp final : emu::Op {
  OpList ops;
  explicit GraphOp(OpList o) : ops(std::move(o)) {}
  void run() const override {
    for (auto& op : ops) op->run();
  }
};

cudaError_t check_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src || kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return cudaErrorInvalidValue;
  bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_dev && !device_ok(dst, n)) || (src_dev && !device_ok(src, n)))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// Records op when the stream captures; else tells the caller to run it (returns false).
bool record(cudaStream_t s, const std::shared_ptr<const emu::Op>& op, cudaError_t* err) {
  *err = cudaSuccess;
  if (!s) return false;
  std::lock_guard lock(g_mu);
  if (!live(s)) {
    *err = cudaErrorInvalidResourceHandle;
    return true;
  }
  if (!s->capture) return false;
  s->capture->ops.push_back(op);
  return true;
}

}  // namespace

namespace emu {
void submit(cudaStream_t stream, std::shared_ptr<const Op> op) {
  if (auto* k = dynamic_cast<const KernelOp*>(op.get()); k && !config_ok(k->grid, k->block)) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  cudaError_t e;
  if (record(stream, op, &e)) {
    if (e) fail(e);
    return;
  }
  op->run();
}
}  // namespace emu

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  // Synchronous: runs now even while a stream captures (CUDA would refuse in global mode).
  if (cudaError_t e = check_copy(dst, src, bytes, kind)) return fail(e);
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (cudaError_t e = check_copy(dst, src, bytes, kind)) return fail(e);
  if (bytes == 0) return cudaSuccess;
  auto op = std::make_shared<CopyOp>(dst, src, bytes);
  cudaError_t e;
  if (record(stream, op, &e)) return e ? fail(e) : cudaSuccess;
  op->run();
  return cudaSuccess;
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!device_ok(ptr, bytes)) return fail(cudaErrorInvalidValue);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!device_ok(ptr, bytes)) return fail(cudaErrorInvalidValue);
  auto op = std::make_shared<SetOp>(ptr, value, bytes);
  cudaError_t e;
  if (record(stream, op, &e)) return e ? fail(e) : cudaSuccess;
  op->run();
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (!stream) return fail(cudaErrorInvalidValue);
  auto* s = new CUstream_st;
  s->flags = flags;
  std::lock_guard lock(g_mu);
  g_handles.insert(s);
  *stream = s;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard lock(g_mu);
  if (!s || !live(s)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) {  // an unfinished capture is dropped
    delete s->capture;
    --g_capturing;
  }
  g_handles.erase(s);
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (!s) return cudaSuccess;  // everything already ran
  std::lock_guard lock(g_mu);
  if (!live(s)) return fail(cudaErrorInvalidResourceHandle);
  if (!s->capture) return cudaSuccess;
  s->invalidated = true;
  return fail(cudaErrorStreamCaptureUnsupported);
}

cudaError_t cudaDeviceSynchronize() {
  std::lock_guard lock(g_mu);
  return g_capturing ? fail(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  if (!s) return fail(cudaErrorStreamCaptureUnsupported);  // the legacy default stream
  if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue);
  std::lock_guard lock(g_mu);
  if (!live(s)) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture) return fail(cudaErrorIllegalState);
  s->capture = new CUgraph_st;
  s->invalidated = false;
  ++g_capturing;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  if (!s || !graph) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(g_mu);
  if (!live(s)) return fail(cudaErrorInvalidResourceHandle);
  if (!s->capture) return fail(cudaErrorIllegalState);
  cudaGraph_t g = s->capture;
  s->capture = nullptr;
  --g_capturing;
  if (s->invalidated) {
    delete g;
    *graph = nullptr;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  g_handles.insert(g);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  if (!status) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(g_mu);
  if (s && !live(s)) return fail(cudaErrorInvalidResourceHandle);
  *status = s && s->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  (void)flags;
  if (!exec) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(g_mu);
  if (!graph || !live(graph)) return fail(cudaErrorInvalidResourceHandle);
  auto* e = new CUgraphExec_st{graph->ops};
  g_handles.insert(e);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  std::shared_ptr<const emu::Op> op;
  {
    std::lock_guard lock(g_mu);
    if (!exec || !live(exec)) return fail(cudaErrorInvalidResourceHandle);
    op = std::make_shared<GraphOp>(exec->ops);
  }
  cudaError_t e;
  if (record(stream, op, &e)) return e ? fail(e) : cudaSuccess;
  op->run();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard lock(g_mu);
  if (!graph || !live(graph)) return fail(cudaErrorInvalidResourceHandle);
  g_handles.erase(graph);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard lock(g_mu);
  if (!exec || !live(exec)) return fail(cudaErrorInvalidResourceHandle);
  g_handles.erase(exec);
  delete exec;
  return cudaSuccess;
}

// ---- f16 ------------------------------------------------------------------------------------
float __half2float(__half h) {
  uint32_t b = __half_as_ushort(h);
  uint32_t sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1f, m = b & 0x3ff;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));  // inf, NaN (payload kept)
  return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}

__half __float2half_rn(float f) {
  uint32_t x = __float_as_uint(f);
  auto sign = static_cast<unsigned short>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  auto out = [&](uint32_t v) { return __ushort_as_half(static_cast<unsigned short>(sign | v)); };
  if (x >= 0x7f800000u)  // inf, or NaN kept quiet with the top payload bits
    return out(x == 0x7f800000u ? 0x7c00u : 0x7e00u | ((x >> 13) & 0x3ffu));
  if (x >= 0x477ff000u) return out(0x7c00u);  // >= 65520 rounds to inf
  if (x < 0x38800000u) {                       // below 2^-14: a subnormal half (or zero)
    if (x < 0x33000000u) return out(0);        // below 2^-25: rounds to zero
    uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // value in units of 2^-24 is m >> shift
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;  // may carry into the smallest normal
    return out(r);
  }
  uint32_t r = (x - 0x38000000u) >> 13, rem = x & 0x1fffu;  // rebias 127 -> 15
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;      // may carry into the exponent
  return out(r);
}
