// ascendc_cpu_model.h -- CPU FUNCTIONAL MODEL of the subset of the Ascend C API that
// autofusion's generated kernels use. C++17, header only.
//
// *** This is NOT Ascend C and NOT a simulator of an NPU. ***
// It exists so the kernels autofusion prints can be compiled with g++ and run on a CPU, which
// checks the generated code's LOGIC (indexing, tiling, tails, queue discipline, the math of
// each vector call, the Matmul call's operands). It says nothing about NPU performance, and
// only the documented semantics of each call are modelled (no pipes, no async, no L1/L0).
//
// What it checks beyond computing results:
//   * TQue discipline: AllocTensor on a queue with no free buffer, DeQue on an empty queue,
//     FreeTensor of a buffer that is not in use, EnQue/DeQue counts -> abort with a message;
//   * the unified buffer (UB) budget: TPipe::InitBuffer beyond AFCPU_UB_BYTES -> abort;
//   * DataCopy lengths must be a multiple of 32 bytes (DataCopyPad is used for tails);
//   * LocalTensor accesses stay inside their buffer; GlobalTensor accesses inside SetGlobalBuffer.
// Multiple AI cores are emulated by running the kernel once per block index (afcpu::Launch).
#ifndef AUTOFUSION_ASCENDC_CPU_MODEL_H
#define AUTOFUSION_ASCENDC_CPU_MODEL_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*

#ifndef AFCPU_UB_BYTES
#define AFCPU_UB_BYTES (192 * 1024)  // Atlas A2 vector-core unified buffer
#endif

#define KERNEL_TYPE_AIV_ONLY 1
#define KERNEL_TYPE_MIX_AIC_1_2 2
#define KERNEL_TASK_TYPE_DEFAULT(t) ((void)(t))

enum pipe_t { PIPE_S, PIPE_V, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };  // global, as in Ascend C

namespace afcpu {
[[noreturn]] inline void Fail(const char* what) {
    std::fprintf(stderr, "ascendc-cpu-model: %s\n", what);
    std::abort();
}
inline int64_t& BlockIdx() { static thread_local int64_t idx = 0; return idx; }
inline int64_t& BlockNum() { static thread_local int64_t num = 1; return num; }
inline std::vector<uint8_t>& SysWorkspace() { static std::vector<uint8_t> ws(1024); return ws; }
}  // namespace afcpu

namespace AscendC {

enum class TPosition { GM, VECIN, VECOUT, VECCALC, A1, B1, C1, CO1, CO2 };
using QuePosition = TPosition;

inline int64_t GetBlockIdx() { return afcpu::BlockIdx(); }
inline int64_t GetBlockNum() { return afcpu::BlockNum(); }

template <typename T>
class GlobalTensor {
public:
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t size) { ptr_ = buffer; size_ = size; }
    void SetGlobalBuffer(__gm__ T* buffer) { ptr_ = buffer; size_ = UINT64_MAX; }
    GlobalTensor operator[](uint64_t offset) const {
        if (offset > size_) afcpu::Fail("GlobalTensor offset out of range");
        GlobalTensor g; g.ptr_ = ptr_ + offset; g.size_ = size_ - offset; return g;
    }
    T GetValue(uint64_t i) const { Check(i); return ptr_[i]; }
    void SetValue(uint64_t i, T v) { Check(i); ptr_[i] = v; }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    uint64_t GetSize() const { return size_; }
    T* ptr_ = nullptr;
    uint64_t size_ = 0;
private:
    void Check(uint64_t i) const { if (i >= size_) afcpu::Fail("GlobalTensor index out of range"); }
};

template <typename T>
class LocalTensor {
public:
    LocalTensor() = default;
    LocalTensor(T* p, uint32_t n, int slot) : ptr_(p), size_(n), slot_(slot) {}
    LocalTensor operator[](uint32_t offset) const {
        if (offset > size_) afcpu::Fail("LocalTensor offset out of range");
        if ((offset * sizeof(T)) % 32 != 0) afcpu::Fail("LocalTensor offset not 32-byte aligned");
        return LocalTensor(ptr_ + offset, size_ - offset, -1);
    }
    T GetValue(uint32_t i) const { Check(i); return ptr_[i]; }
    void SetValue(uint32_t i, T v) const { Check(i); ptr_[i] = v; }
    uint32_t GetSize() const { return size_; }
    T* ptr_ = nullptr;
    uint32_t size_ = 0;
    int slot_ = -1;
    void Check(uint64_t i) const { if (i >= size_) afcpu::Fail("LocalTensor index out of range"); }
};

class TPipe;

// A queue of `depth` equal buffers, with the Alloc -> EnQue -> DeQue -> Free life cycle.
template <TPosition pos, int32_t depth>
class TQue {
public:
    template <typename T>
    LocalTensor<T> AllocTensor() {
        for (int i = 0; i < depth; i++) {
            if (state_[i] == 0) {
                state_[i] = 1;
                return LocalTensor<T>(reinterpret_cast<T*>(mem_.data() + i * bytes_),
                                      static_cast<uint32_t>(bytes_ / sizeof(T)), i);
            }
        }
        afcpu::Fail("TQue::AllocTensor: no free buffer (missing FreeTensor?)");
    }
    template <typename T>
    bool EnQue(const LocalTensor<T>& t) {
        if (t.slot_ < 0 || state_[t.slot_] != 1) afcpu::Fail("TQue::EnQue of a tensor not allocated from this queue");
        state_[t.slot_] = 2;
        fifo_.push_back(t.slot_);
        return true;
    }
    template <typename T>
    LocalTensor<T> DeQue() {
        if (fifo_.empty()) afcpu::Fail("TQue::DeQue on an empty queue");
        int s = fifo_.front();
        fifo_.erase(fifo_.begin());
        state_[s] = 3;
        return LocalTensor<T>(reinterpret_cast<T*>(mem_.data() + s * bytes_),
                              static_cast<uint32_t>(bytes_ / sizeof(T)), s);
    }
    template <typename T>
    void FreeTensor(LocalTensor<T>& t) {
        if (t.slot_ < 0 || state_[t.slot_] == 0) afcpu::Fail("TQue::FreeTensor of a free buffer");
        state_[t.slot_] = 0;
    }
    ~TQue() {
        // A kernel that ends with tensors still queued or in use has a pipeline bug.
        if (!mem_.empty()) {
            for (int i = 0; i < depth; i++) {
                if (state_[i] != 0) { std::fprintf(stderr, "ascendc-cpu-model: TQue destroyed with buffer %d in use\n", i); std::abort(); }
            }
        }
    }
private:
    friend class TPipe;
    std::vector<uint8_t> mem_;
    uint64_t bytes_ = 0;
    int state_[depth] = {};  // 0 free, 1 allocated, 2 queued, 3 dequeued
    std::vector<int> fifo_;
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get() { return LocalTensor<T>(reinterpret_cast<T*>(mem_.data()), static_cast<uint32_t>(mem_.size() / sizeof(T)), -1); }
    template <typename T>
    LocalTensor<T> Get(uint32_t n) {
        if (n * sizeof(T) > mem_.size()) afcpu::Fail("TBuf::Get beyond the buffer");
        return LocalTensor<T>(reinterpret_cast<T*>(mem_.data()), n, -1);
    }
private:
    friend class TPipe;
    std::vector<uint8_t> mem_;
};

class TPipe {
public:
    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len) {
        if (len % 32 != 0) afcpu::Fail("TPipe::InitBuffer: buffer length must be a multiple of 32 bytes");
        Use(static_cast<uint64_t>(num) * len);
        que.bytes_ = len;
        que.mem_.assign(static_cast<size_t>(num) * len, 0);
        return true;
    }
    template <TPosition p>
    bool InitBuffer(TBuf<p>& buf, uint32_t len) {
        if (len % 32 != 0) afcpu::Fail("TPipe::InitBuffer: buffer length must be a multiple of 32 bytes");
        Use(len);
        buf.mem_.assign(len, 0);
        return true;
    }
    uint64_t UsedBytes() const { return used_; }
private:
    void Use(uint64_t n) {
        used_ += n;
        if (used_ > AFCPU_UB_BYTES) afcpu::Fail("TPipe: unified buffer budget exceeded");
    }
    uint64_t used_ = 0;
};

// ---- data movement -----------------------------------------------------------------------
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // GM side: bytes; UB side: 32-byte blocks
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};
template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
    if ((count * sizeof(T)) % 32 != 0) afcpu::Fail("DataCopy GM->UB: length must be a multiple of 32 bytes (use DataCopyPad)");
    if (count > dst.size_ || count > src.size_) afcpu::Fail("DataCopy GM->UB out of range");
    std::memcpy(dst.ptr_, src.ptr_, count * sizeof(T));
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
    if ((count * sizeof(T)) % 32 != 0) afcpu::Fail("DataCopy UB->GM: length must be a multiple of 32 bytes (use DataCopyPad)");
    if (count > dst.size_ || count > src.size_) afcpu::Fail("DataCopy UB->GM out of range");
    std::memcpy(dst.ptr_, src.ptr_, count * sizeof(T));
}
// blockCount blocks of blockLen bytes. GM side: blocks blockLen + stride bytes apart; UB
// side: each block starts on a 32-byte boundary (blockLen rounded up) plus stride blocks.
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad) {
    if (p.blockLen % sizeof(T) != 0) afcpu::Fail("DataCopyPad GM->UB: blockLen not a multiple of the element size");
    const uint64_t ubBlock = (p.blockLen + 31) / 32 * 32 + p.dstStride * 32ull;
    const uint64_t gmBlock = p.blockLen + p.srcStride;
    if (p.blockCount == 0) return;
    if ((p.blockCount - 1) * gmBlock + p.blockLen > src.size_ * sizeof(T) ||
        (p.blockCount - 1) * ubBlock + (p.blockLen + 31) / 32 * 32 > dst.size_ * sizeof(T))
        afcpu::Fail("DataCopyPad GM->UB out of range");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.ptr_);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.ptr_);
    for (uint32_t b = 0; b < p.blockCount; b++) {
        std::memcpy(d + b * ubBlock, s + b * gmBlock, p.blockLen);
        T* row = reinterpret_cast<T*>(d + b * ubBlock);
        for (uint32_t i = p.blockLen / sizeof(T); i < (p.blockLen + 31) / 32 * 32 / sizeof(T); i++)
            row[i] = pad.isPad ? pad.paddingValue : T(0);
    }
}
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
    if (p.blockLen % sizeof(T) != 0) afcpu::Fail("DataCopyPad UB->GM: blockLen not a multiple of the element size");
    const uint64_t ubBlock = (p.blockLen + 31) / 32 * 32 + p.srcStride * 32ull;
    const uint64_t gmBlock = p.blockLen + p.dstStride;
    if (p.blockCount == 0) return;
    if ((p.blockCount - 1) * gmBlock + p.blockLen > dst.size_ * sizeof(T) ||
        (p.blockCount - 1) * ubBlock + p.blockLen > src.size_ * sizeof(T))
        afcpu::Fail("DataCopyPad UB->GM out of range");
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.ptr_);
    const uint8_t* s = reinterpret_cast<const uint8_t*>(src.ptr_);
    for (uint32_t b = 0; b < p.blockCount; b++) std::memcpy(d + b * gmBlock, s + b * ubBlock, p.blockLen);
}

// ---- vector computation (count elements from the start of each tensor) ---------------------
namespace detail {
template <typename T>
inline void CheckCount(const LocalTensor<T>& t, int32_t n) {
    if (n < 0 || static_cast<uint32_t>(n) > t.size_) afcpu::Fail("vector instruction count beyond the tensor");
}
}  // namespace detail

#define AFCPU_BINARY(NAME, EXPR)                                                                   \
    template <typename T>                                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,         \
              const int32_t& count) {                                                              \
        detail::CheckCount(dst, count); detail::CheckCount(a, count); detail::CheckCount(b, count); \
        for (int32_t i = 0; i < count; i++) { T x = a.ptr_[i]; T y = b.ptr_[i]; dst.ptr_[i] = (EXPR); } \
    }
AFCPU_BINARY(Add, x + y)
AFCPU_BINARY(Sub, x - y)
AFCPU_BINARY(Mul, x * y)
AFCPU_BINARY(Div, x / y)
AFCPU_BINARY(Max, (x != x || y != y) ? x + y : (x > y ? x : y))
AFCPU_BINARY(Min, (x != x || y != y) ? x + y : (x < y ? x : y))
#undef AFCPU_BINARY

#define AFCPU_UNARY(NAME, EXPR)                                                                    \
    template <typename T>                                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {        \
        detail::CheckCount(dst, count); detail::CheckCount(src, count);                            \
        for (int32_t i = 0; i < count; i++) { T x = src.ptr_[i]; dst.ptr_[i] = (EXPR); }           \
    }
AFCPU_UNARY(Exp, std::exp(x))
AFCPU_UNARY(Ln, std::log(x))
AFCPU_UNARY(Abs, std::fabs(x))
AFCPU_UNARY(Sqrt, std::sqrt(x))
AFCPU_UNARY(Reciprocal, T(1) / x)
AFCPU_UNARY(Relu, x != x ? x : (x > T(0) ? x : T(0)))
#undef AFCPU_UNARY

#define AFCPU_SCALAR(NAME, EXPR)                                                                   \
    template <typename T>                                                                          \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& s, const int32_t& count) { \
        detail::CheckCount(dst, count); detail::CheckCount(src, count);                            \
        for (int32_t i = 0; i < count; i++) { T x = src.ptr_[i]; dst.ptr_[i] = (EXPR); }           \
    }
AFCPU_SCALAR(Adds, x + s)
AFCPU_SCALAR(Muls, x * s)
AFCPU_SCALAR(Maxs, x != x ? x : (x > s ? x : s))
AFCPU_SCALAR(Mins, x != x ? x : (x < s ? x : s))
AFCPU_SCALAR(LeakyRelu, x >= T(0) ? x : x * s)
#undef AFCPU_SCALAR

// dst[0] = sum / max of src[0, count); work is the documented shared temporary buffer.
template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count) {
    detail::CheckCount(src, count); detail::CheckCount(dst, 1); detail::CheckCount(work, 1);
    double acc = 0.0;
    for (int32_t i = 0; i < count; i++) acc += src.ptr_[i];
    dst.ptr_[0] = static_cast<T>(acc);
}
template <typename T>
void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
               bool calIndex = false) {
    detail::CheckCount(src, count); detail::CheckCount(dst, 1); detail::CheckCount(work, 1);
    (void)calIndex;
    T m = src.ptr_[0];
    for (int32_t i = 1; i < count; i++) m = (src.ptr_[i] > m || src.ptr_[i] != src.ptr_[i]) ? src.ptr_[i] : m;
    dst.ptr_[0] = m;
}

template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& s, const int32_t& count) {
    detail::CheckCount(dst, count);
    for (int32_t i = 0; i < count; i++) dst.ptr_[i] = s;
}

// Pipeline barriers and cache maintenance order work on the NPU; on the CPU all work is
// synchronous, so they only exist to be called.
template <pipe_t p>
inline void PipeBarrier() {}
enum class CacheLine { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class DcciDst { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T, CacheLine c, DcciDst d = DcciDst::CACHELINE_OUT>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {}

// ---- high-level Matmul API (fp32 ND operands in GM, C = A x B [+ bias]) ----------------------
enum class CubeFormat { ND, NZ };
template <TPosition P, CubeFormat F, typename T>
struct MatmulType { using DataT = T; };
struct MatmulConfig { int dummy; };
constexpr MatmulConfig CFG_NORM = {0};

}  // namespace AscendC

// The tiling the host computes for one matmul (the fields the kernels read; the real
// TCubeTiling has more). Same name as in kernel_tiling/kernel_tiling.h.
struct TCubeTiling {
    int32_t usedCoreNum, M, N, Ka, Kb, singleCoreM, singleCoreN, singleCoreK, baseM, baseN, baseK, isBias;
};
using AscendC::CubeFormat;

namespace AscendC {
template <class A, class B, class C, class BIAS, const MatmulConfig& CFG = CFG_NORM>
class Matmul {
    using TA = typename A::DataT;
    using TC = typename C::DataT;
public:
    void Init(const TCubeTiling* t, TPipe* = nullptr) { tiling_ = *t; tailM_ = t->singleCoreM; tailN_ = t->singleCoreN; tailK_ = t->singleCoreK; }
    void SetTensorA(const GlobalTensor<TA>& a, bool trans = false) { a_ = a; transA_ = trans; }
    void SetTensorB(const GlobalTensor<TA>& b, bool trans = false) { b_ = b; transB_ = trans; }
    void SetBias(const GlobalTensor<TC>& bias) { bias_ = bias; hasBias_ = true; }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
        if (tailM > 0) tailM_ = tailM;
        if (tailN > 0) tailN_ = tailN;
        if (tailK > 0) tailK_ = tailK;
    }
    // C[i, j] = sum_k A[i, k] * B[k, j] over the single-core shape, with leading dimensions
    // from the original shape (tiling.M/N/Ka): A is [M, Ka] (or [Ka, M] transposed), B is
    // [Kb, N] (or [N, Kb]), C is [M, N]. Accumulates in double, stores TC.
    void IterateAll(const GlobalTensor<TC>& c, uint8_t enAtomic = 0) {
        if (a_.ptr_ == nullptr || b_.ptr_ == nullptr) afcpu::Fail("Matmul::IterateAll before SetTensorA/SetTensorB");
        const int64_t M = tiling_.M, N = tiling_.N, K = tiling_.Ka;
        const int64_t m = tailM_, n = tailN_, k = tailK_;
        if (m <= 0 || n <= 0 || k <= 0) return;
        // Every element the product reads or writes must lie inside its GlobalTensor.
        const uint64_t lastA = transA_ ? (k - 1) * M + (m - 1) : (m - 1) * K + (k - 1);
        const uint64_t lastB = transB_ ? (n - 1) * K + (k - 1) : (k - 1) * N + (n - 1);
        const uint64_t lastC = (m - 1) * N + (n - 1);
        if (lastA >= a_.size_ || lastB >= b_.size_ || lastC >= c.size_) afcpu::Fail("Matmul::IterateAll: operand out of range");
        if (hasBias_ && static_cast<uint64_t>(n) > bias_.size_) afcpu::Fail("Matmul::IterateAll: bias out of range");
        std::vector<double> acc(static_cast<size_t>(n));
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) acc[j] = hasBias_ ? static_cast<double>(bias_.ptr_[j]) : 0.0;
            for (int64_t kk = 0; kk < k; kk++) {
                const double av = transA_ ? a_.ptr_[kk * M + i] : a_.ptr_[i * K + kk];
                if (transB_) {
                    for (int64_t j = 0; j < n; j++) acc[j] += av * b_.ptr_[j * K + kk];
                } else {
                    const TA* brow = b_.ptr_ + kk * N;
                    for (int64_t j = 0; j < n; j++) acc[j] += av * brow[j];
                }
            }
            TC* crow = c.ptr_ + i * N;
            for (int64_t j = 0; j < n; j++) crow[j] = static_cast<TC>(acc[j]) + (enAtomic ? crow[j] : TC(0));
        }
    }
    void End() { hasBias_ = false; }
private:
    TCubeTiling tiling_{};
    GlobalTensor<TA> a_, b_;
    GlobalTensor<TC> bias_;
    bool transA_ = false, transB_ = false, hasBias_ = false;
    int64_t tailM_ = 0, tailN_ = 0, tailK_ = 0;
};
}  // namespace AscendC

inline GM_ADDR GetSysWorkSpacePtr() { return afcpu::SysWorkspace().data(); }
namespace AscendC {
// The launch's workspace starts with the library's system workspace
// (PlatformAscendC::GetLibApiWorkSpaceSize() bytes); the user part follows.
inline void SetSysWorkspace(GM_ADDR) {}
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace == nullptr ? nullptr : workspace + 1024; }
}  // namespace AscendC
namespace afcpu {
template <class P>
inline void RegistMatmul(P*) {}
template <class P, class MM, class T, class... Rest>
inline void RegistMatmul(P* pipe, MM& mm, const T* tiling, Rest&&... rest) {
    mm.Init(tiling, pipe);
    RegistMatmul(pipe, rest...);
}
}  // namespace afcpu
// One or more (matmul object, tiling) pairs, as the documented macro accepts.
#define REGIST_MATMUL_OBJ(pipe, workspace, ...) \
    do { (void)(workspace); afcpu::RegistMatmul((pipe), __VA_ARGS__); } while (0)

// ---- host-side tiling API used by the generated host tiling functions ------------------------
namespace platform_ascendc {
class PlatformAscendC {
public:
    uint32_t GetCoreNumAic() const { return 24; }
    uint32_t GetCoreNumAiv() const { return 48; }
    uint32_t GetLibApiWorkSpaceSize() const { return 1024; }
};
class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance() { static PlatformAscendC p; return &p; }
};
}  // namespace platform_ascendc

namespace matmul_tiling {
enum class TPosition { GM, VECIN, VECOUT };
enum class CubeFormat { ND, NZ };
enum class DataType { DT_FLOAT, DT_FLOAT16 };
// Modelled: the fields the kernels read. The real API also chooses base blocks and L1 depths.
class MultiCoreMatmulTiling {
public:
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC&) {}
    int32_t SetDim(int32_t d) { dim_ = d; return 0; }
    int32_t SetAType(TPosition, CubeFormat, DataType, bool = false) { return 0; }
    int32_t SetBType(TPosition, CubeFormat, DataType, bool = false) { return 0; }
    int32_t SetCType(TPosition, CubeFormat, DataType) { return 0; }
    int32_t SetBiasType(TPosition, CubeFormat, DataType) { return 0; }
    int32_t SetOrgShape(int32_t m, int32_t n, int32_t k) { M_ = m; N_ = n; K_ = k; return 0; }
    int32_t SetShape(int32_t m, int32_t n, int32_t k) { m_ = m; n_ = n; k_ = k; return 0; }
    int32_t SetSingleShape(int32_t m = -1, int32_t n = -1, int32_t k = -1) { sm_ = m; sn_ = n; sk_ = k; return 0; }
    int32_t EnableBias(bool b) { bias_ = b; return 0; }
    int32_t SetBufferSpace(int32_t = -1, int32_t = -1, int32_t = -1) { return 0; }
    int64_t GetTiling(TCubeTiling& t) {
        if (M_ <= 0 || N_ <= 0 || K_ <= 0 || dim_ <= 0) return -1;
        t.M = M_; t.N = N_; t.Ka = K_; t.Kb = K_;
        t.singleCoreM = sm_ > 0 ? sm_ : (m_ + dim_ - 1) / dim_;
        t.singleCoreN = sn_ > 0 ? sn_ : n_;
        t.singleCoreK = sk_ > 0 ? sk_ : k_;
        t.baseM = t.singleCoreM < 128 ? t.singleCoreM : 128;
        t.baseN = t.singleCoreN < 256 ? t.singleCoreN : 256;
        t.baseK = t.singleCoreK < 64 ? t.singleCoreK : 64;
        t.usedCoreNum = static_cast<int32_t>((m_ + t.singleCoreM - 1) / t.singleCoreM);
        t.isBias = bias_ ? 1 : 0;
        return 0;
    }
private:
    int32_t dim_ = 1, M_ = 0, N_ = 0, K_ = 0, m_ = 0, n_ = 0, k_ = 0, sm_ = -1, sn_ = -1, sk_ = -1;
    bool bias_ = false;
};
}  // namespace matmul_tiling

// ---- launch: the <<<blockDim, l2ctrl, stream>>> of the real toolchain ----------------------
namespace afcpu {
template <class F>
inline void Launch(uint32_t blockDim, F&& body) {
    BlockNum() = blockDim;
    for (uint32_t b = 0; b < blockDim; b++) {
        BlockIdx() = b;
        body();
    }
    BlockIdx() = 0;
    BlockNum() = 1;
}
}  // namespace afcpu
#define AFCPU_LAUNCH(kernel, blockDim, stream, ...) \
    ((void)(stream), afcpu::Launch((blockDim), [&]() { kernel(__VA_ARGS__); }))

#endif  // AUTOFUSION_ASCENDC_CPU_MODEL_H
