// acl_decls.h -- declarations of exactly the AscendCL functions, types and constants that
// autofusion's generated host programs call, with their documented signatures (AscendCL
// "acl/acl.h", "acl/acl_rt.h"). The generated host code is compiled against this header
// (g++ -fsyntax-only in the tests) so that a call with a wrong signature is caught without
// a CANN install. On a real install the host code includes "acl/acl.h" instead.
#ifndef AUTOFUSION_ACL_DECLS_H
#define AUTOFUSION_ACL_DECLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void* aclrtStream;

#define ACL_SUCCESS 0

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
} aclrtMemMallocPolicy;

aclError aclInit(const char* configPath);
aclError aclFinalize(void);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtCreateStream(aclrtStream* stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void* devPtr);
aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind);

#ifdef __cplusplus
}
#endif

#endif  // AUTOFUSION_ACL_DECLS_H
