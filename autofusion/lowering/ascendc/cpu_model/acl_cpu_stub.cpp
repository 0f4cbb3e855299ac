// acl_cpu_stub.cpp -- CPU STUB of the AscendCL calls in acl_decls.h, for running the
// generated host program and kernels on a CPU with the functional model
// (ascendc_cpu_model.h). "Device" memory is host memory; streams are synchronous.
// It checks call order (aclInit before use, a stream and device set before malloc/launch)
// and that every pointer freed was allocated and every allocation freed by aclFinalize.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "acl_decls.h"

namespace {
bool g_init = false;
int g_device = -1;
int g_streams = 0;
std::set<void*>& Allocs() { static std::set<void*> s; return s; }
aclError Err(const char* what) {
    std::fprintf(stderr, "acl-cpu-stub: %s\n", what);
    return 100000;  // ACL_ERROR_INVALID_PARAM
}
}  // namespace

extern "C" {

aclError aclInit(const char*) {
    if (g_init) return Err("aclInit called twice");
    g_init = true;
    return ACL_SUCCESS;
}
aclError aclFinalize(void) {
    if (!g_init) return Err("aclFinalize without aclInit");
    if (!Allocs().empty()) return Err("aclFinalize with device memory still allocated");
    if (g_streams != 0) return Err("aclFinalize with a stream not destroyed");
    g_init = false;
    return ACL_SUCCESS;
}
aclError aclrtSetDevice(int32_t id) {
    if (!g_init) return Err("aclrtSetDevice before aclInit");
    g_device = id;
    return ACL_SUCCESS;
}
aclError aclrtResetDevice(int32_t id) {
    if (g_device != id) return Err("aclrtResetDevice of a device not set");
    g_device = -1;
    return ACL_SUCCESS;
}
aclError aclrtCreateStream(aclrtStream* stream) {
    if (g_device < 0) return Err("aclrtCreateStream without a device");
    static int token;
    *stream = &token;
    g_streams++;
    return ACL_SUCCESS;
}
aclError aclrtDestroyStream(aclrtStream stream) {
    if (stream == nullptr || g_streams <= 0) return Err("aclrtDestroyStream of no stream");
    g_streams--;
    return ACL_SUCCESS;
}
aclError aclrtSynchronizeStream(aclrtStream stream) {
    return stream == nullptr ? Err("aclrtSynchronizeStream of a null stream") : ACL_SUCCESS;
}
aclError aclrtMalloc(void** p, size_t size, aclrtMemMallocPolicy) {
    if (g_device < 0) return Err("aclrtMalloc without a device");
    // 32-byte aligned and padded like device memory, zero-filled for reproducibility.
    size_t n = (size + 63) / 32 * 32;
    *p = std::aligned_alloc(32, n);
    if (*p == nullptr) return Err("aclrtMalloc: out of memory");
    std::memset(*p, 0, n);
    Allocs().insert(*p);
    return ACL_SUCCESS;
}
aclError aclrtFree(void* p) {
    if (Allocs().erase(p) != 1) return Err("aclrtFree of a pointer not from aclrtMalloc");
    std::free(p);
    return ACL_SUCCESS;
}
aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind) {
    if (count > destMax) return Err("aclrtMemcpy: count > destMax");
    if (count) std::memcpy(dst, src, count);
    return ACL_SUCCESS;
}

}  // extern "C"
