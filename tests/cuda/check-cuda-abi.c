/* Built only where the CUDA toolkit's headers exist: checks that what
 * ext/cuda declares by hand (gstpinnedcudaloader.h) is what the real
 * cuda_runtime_api.h / driver_types.h say. Compiling is the test.
 *
 * With GST_PINNED_CUDA_ABI_CHECK the loader's header spells its handle, error and
 * enum types with the real ones, so every function pointer of the table
 * (which is also every symbol the loader looks up, "cuda" + field name) is
 * compared with the real function's type: return type, parameter count,
 * order and types. Every constant the plugin uses is compared by value. */
#include <cuda_runtime_api.h>
#define GST_PINNED_CUDA_ABI_CHECK 1
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

#define SAME(a, b) _Static_assert ((long) (a) == (long) (b), #a " != " #b)

/* enum cudaError */
SAME (GST_PINNED_CUDA_SUCCESS, cudaSuccess);
SAME (GST_PINNED_CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue);
SAME (GST_PINNED_CUDA_ERROR_MEMORY_ALLOCATION, cudaErrorMemoryAllocation);
SAME (GST_PINNED_CUDA_ERROR_INITIALIZATION, cudaErrorInitializationError);
SAME (GST_PINNED_CUDA_ERROR_INVALID_MEMCPY_DIRECTION,
    cudaErrorInvalidMemcpyDirection);
SAME (GST_PINNED_CUDA_ERROR_INSUFFICIENT_DRIVER, cudaErrorInsufficientDriver);
SAME (GST_PINNED_CUDA_ERROR_INSUFFICIENT_DRIVER, 35);
SAME (GST_PINNED_CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice);
SAME (GST_PINNED_CUDA_ERROR_NO_DEVICE, 100);
SAME (GST_PINNED_CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice);
SAME (GST_PINNED_CUDA_ERROR_INVALID_RESOURCE_HANDLE,
    cudaErrorInvalidResourceHandle);
SAME (GST_PINNED_CUDA_ERROR_NOT_READY, cudaErrorNotReady);
SAME (GST_PINNED_CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress);
SAME (GST_PINNED_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
    cudaErrorHostMemoryAlreadyRegistered);
SAME (GST_PINNED_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712);
SAME (GST_PINNED_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    cudaErrorHostMemoryNotRegistered);
SAME (GST_PINNED_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713);
SAME (GST_PINNED_CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported);
SAME (GST_PINNED_CUDA_ERROR_UNKNOWN, cudaErrorUnknown);

/* enum cudaMemcpyKind */
SAME (GST_PINNED_CUDA_MEMCPY_HOST_TO_HOST, cudaMemcpyHostToHost);
SAME (GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE, cudaMemcpyHostToDevice);
SAME (GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST, cudaMemcpyDeviceToHost);
SAME (GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE, cudaMemcpyDeviceToDevice);
SAME (GST_PINNED_CUDA_MEMCPY_DEFAULT, cudaMemcpyDefault);

/* cudaHostRegister flags */
SAME (GST_PINNED_CUDA_HOST_REGISTER_DEFAULT, cudaHostRegisterDefault);
SAME (GST_PINNED_CUDA_HOST_REGISTER_PORTABLE, cudaHostRegisterPortable);
SAME (GST_PINNED_CUDA_HOST_REGISTER_MAPPED, cudaHostRegisterMapped);
SAME (GST_PINNED_CUDA_HOST_REGISTER_IO_MEMORY, cudaHostRegisterIoMemory);
SAME (GST_PINNED_CUDA_HOST_REGISTER_READ_ONLY, cudaHostRegisterReadOnly);
SAME (GST_PINNED_CUDA_HOST_REGISTER_READ_ONLY, 0x08);

/* stream, event flags; device attribute */
SAME (GST_PINNED_CUDA_STREAM_NON_BLOCKING, cudaStreamNonBlocking);
SAME (GST_PINNED_CUDA_EVENT_BLOCKING_SYNC, cudaEventBlockingSync);
SAME (GST_PINNED_CUDA_EVENT_DISABLE_TIMING, cudaEventDisableTiming);
SAME (GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED,
    cudaDevAttrHostRegisterSupported);
SAME (GST_PINNED_CUDA_DEV_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED,
    cudaDevAttrHostRegisterReadOnlySupported);

/* The types the plugin's own build uses (int, opaque pointers) have the
 * size of the real ones. */
_Static_assert (sizeof (int) == sizeof (cudaError_t), "cudaError_t");
_Static_assert (sizeof (int) == sizeof (enum cudaMemcpyKind), "kind");
_Static_assert (sizeof (int) == sizeof (enum cudaDeviceAttr), "attr");
_Static_assert (sizeof (struct GstPinnedCudaStream_st *) ==
    sizeof (cudaStream_t), "cudaStream_t");
_Static_assert (sizeof (struct GstPinnedCudaEvent_st *) == sizeof (cudaEvent_t),
    "cudaEvent_t");

/* Every entry of the function table against the real function. */
#define SIG(field)                                                      \
  _Static_assert (__builtin_types_compatible_p (                        \
          __typeof__ (((GstPinnedCudaRuntime *) 0)->field),                    \
          __typeof__ (&cuda##field)), "signature of cuda" #field)

SIG (GetErrorString);
SIG (GetErrorName);
SIG (RuntimeGetVersion);
SIG (DriverGetVersion);
SIG (GetDeviceCount);
SIG (SetDevice);
SIG (GetDevice);
SIG (DeviceGetAttribute);
SIG (StreamCreateWithFlags);
SIG (StreamDestroy);
SIG (StreamSynchronize);
SIG (StreamWaitEvent);
SIG (EventCreateWithFlags);
SIG (EventDestroy);
SIG (EventRecord);
SIG (EventQuery);
SIG (EventSynchronize);
SIG (MallocPitch);
SIG (Free);
SIG (Memcpy2D);
SIG (Memcpy2DAsync);
SIG (HostRegister);
SIG (HostUnregister);
SIG (GetLastError);
SIG (PeekAtLastError);

int main (void);

int
main (void)
{
  return 0;
}
