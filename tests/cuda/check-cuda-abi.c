/* Built only where the CUDA toolkit's headers exist: checks that the
 * values and signatures ext/cuda declares by hand (gstpinnedcudaloader.h)
 * are those of the real cuda_runtime_api.h. Compiling is the test. */
#include <cuda_runtime_api.h>
#include "gstpinnedcudaloader.h"

#define SAME(a, b) _Static_assert ((int) (a) == (int) (b), #a " != " #b)

SAME (PF_CUDA_SUCCESS, cudaSuccess);
SAME (PF_CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue);
SAME (PF_CUDA_ERROR_MEMORY_ALLOCATION, cudaErrorMemoryAllocation);
SAME (PF_CUDA_ERROR_INITIALIZATION, cudaErrorInitializationError);
SAME (PF_CUDA_ERROR_INVALID_MEMCPY_DIRECTION, cudaErrorInvalidMemcpyDirection);
SAME (PF_CUDA_ERROR_INSUFFICIENT_DRIVER, cudaErrorInsufficientDriver);
SAME (PF_CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice);
SAME (PF_CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice);
SAME (PF_CUDA_ERROR_INVALID_RESOURCE_HANDLE, cudaErrorInvalidResourceHandle);
SAME (PF_CUDA_ERROR_NOT_READY, cudaErrorNotReady);
SAME (PF_CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress);
SAME (PF_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    cudaErrorHostMemoryAlreadyRegistered);
SAME (PF_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    cudaErrorHostMemoryNotRegistered);
SAME (PF_CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported);
SAME (PF_CUDA_ERROR_UNKNOWN, cudaErrorUnknown);
SAME (PF_CUDA_MEMCPY_HOST_TO_DEVICE, cudaMemcpyHostToDevice);
SAME (PF_CUDA_MEMCPY_DEVICE_TO_HOST, cudaMemcpyDeviceToHost);
SAME (PF_CUDA_MEMCPY_DEVICE_TO_DEVICE, cudaMemcpyDeviceToDevice);
SAME (PF_CUDA_MEMCPY_DEFAULT, cudaMemcpyDefault);
SAME (PF_CUDA_HOST_REGISTER_PORTABLE, cudaHostRegisterPortable);
SAME (PF_CUDA_HOST_REGISTER_MAPPED, cudaHostRegisterMapped);
SAME (PF_CUDA_HOST_REGISTER_READ_ONLY, cudaHostRegisterReadOnly);
SAME (PF_CUDA_STREAM_NON_BLOCKING, cudaStreamNonBlocking);
SAME (PF_CUDA_EVENT_BLOCKING_SYNC, cudaEventBlockingSync);
SAME (PF_CUDA_EVENT_DISABLE_TIMING, cudaEventDisableTiming);
SAME (PF_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED,
    cudaDevAttrHostRegisterReadOnlySupported);
_Static_assert (sizeof (PfCudaError) == sizeof (cudaError_t), "cudaError_t");
_Static_assert (sizeof (PfCudaStream) == sizeof (cudaStream_t), "stream");

/* Signatures: the table's types with the handles spelled the real way. */
static void
check_signatures (void)
{
  const char *(*gs) (cudaError_t) = cudaGetErrorString;
  cudaError_t (*mp) (void **, size_t *, size_t, size_t) = cudaMallocPitch;
  cudaError_t (*m2a) (void *, size_t, const void *, size_t, size_t, size_t,
      enum cudaMemcpyKind, cudaStream_t) = cudaMemcpy2DAsync;
  cudaError_t (*m2) (void *, size_t, const void *, size_t, size_t, size_t,
      enum cudaMemcpyKind) = cudaMemcpy2D;
  cudaError_t (*hr) (void *, size_t, unsigned int) = cudaHostRegister;
  cudaError_t (*hu) (void *) = cudaHostUnregister;
  cudaError_t (*sc) (cudaStream_t *, unsigned int) = cudaStreamCreateWithFlags;
  cudaError_t (*sw) (cudaStream_t, cudaEvent_t, unsigned int) =
      cudaStreamWaitEvent;
  cudaError_t (*ec) (cudaEvent_t *, unsigned int) = cudaEventCreateWithFlags;
  cudaError_t (*er) (cudaEvent_t, cudaStream_t) = cudaEventRecord;
  cudaError_t (*da) (int *, enum cudaDeviceAttr, int) = cudaDeviceGetAttribute;
  (void) gs; (void) mp; (void) m2a; (void) m2; (void) hr; (void) hu;
  (void) sc; (void) sw; (void) ec; (void) er; (void) da;
}

int main (void);

int
main (void)
{
  check_signatures ();
  return 0;
}
