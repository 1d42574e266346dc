#!/usr/bin/env python3
# GPU kit, step "frames": device frames of the Python binding, byte-exact.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# One process: a pinnedflow.Producer and a Consumer of it (1080p RGBA, the
# example cameras' pattern, a different frame each time), each received
# frame uploaded by pinnedflow.cuda.Uploader, then read back three ways:
#   py-upload     DeviceFrame.download() (the engine's own device-to-host
#                 copy) equals the bytes the producer wrote;
#   torch-dlpack  torch.from_dlpack(device frame) is a cuda tensor at the
#                 frame's device pointer (no copy) whose .cpu() bytes equal;
#   cupy          cupy.from_dlpack and cupy.asarray (__cuda_array_interface__)
#                 at the same pointer, .get() bytes equal.
#   cudart        torch and pinnedflow share one libcudart in this process:
#                 torch is imported (and its CUDA initialised) before
#                 pinnedflow opens the runtime, so the library's lookup
#                 (dlopen by soname first) gets the runtime torch loaded;
#                 /proc/self/maps must show one libcudart file, named.
# Before pinnedflow loads, GST_PINNEDFLOW_CUDART_PATH (unless set) is this
# interpreter's sys.path, so where the only runtime is the one a Python
# CUDA package installed (site-packages/nvidia/cu13/lib, .../cuda_runtime/
# lib), the library's lookup finds it (lib/pinnedflow/cuda/pf-cuda.c).
# GPUKIT_MODE=gpu (a GPU run): finding no device is a failure, not a skip.
# Prints one line per check, "RESULT <name> pass|fail|skip <reason>", and
# exits 0 when none failed. torch and CuPy are the interpreter's own (the
# GPU host's); nothing of Debian's Python is used. In an emulator run
# (GST_PINNEDFLOW_CUDART names the kit's cudart emulator) the device
# pointers are the emulator's host memory: torch and CuPy are skipped with
# that reason, never passed.
#
# Needs: PYTHONPATH with the kit's pinnedflow package, PINNEDFLOW_LIBRARY
# naming the kit's libpinnedflow.so.0, numpy.
import ctypes
import os
import shutil
import sys
import tempfile
import traceback

W, H, FRAMES = 1920, 1080, 8
results = []


def report(name, state, why=""):
    results.append(state)
    print("RESULT %s %s %s" % (name, state, why), flush=True)


def pattern(n):
    """The example cameras' frame n: (x + 2y + 3c + 5n) & 0xff."""
    import numpy
    y, x, c = numpy.ogrid[0:H, 0:W, 0:4]
    return ((x + 2 * y + 3 * c + 5 * n) & 0xff).astype(numpy.uint8)


class Pair(object):
    """A producer and a consumer of it in this process."""

    def __init__(self, pinnedflow, path):
        size = pinnedflow.video_layout("RGBA", W, H)["size"]
        self.prod = pinnedflow.Producer(path, slot_size=size, n_slots=4)
        self.prod.set_video("RGBA", W, H, (30, 1))
        self.cons = pinnedflow.Consumer(path, timeout_ms=5000)
        self.prod.wait_clients(1, 10000)

    def send(self, n):
        with self.prod.loan(5000) as loan:
            loan.array()[:] = pattern(n)
            if loan.publish(pts=n * 1000) != 1:
                raise RuntimeError("frame %d reached no consumer" % n)
        return self.cons.next(10000)

    def close(self):
        self.prod.close()
        self.cons.close()


def check_torch(dev, want, n):
    """None when it passed, else why not; raises on a failure."""
    import torch
    t = torch.from_dlpack(dev)
    if not t.is_cuda or tuple(t.shape) != (H, W, 4):
        raise AssertionError("torch.from_dlpack: %s %s" % (t.device,
                                                          tuple(t.shape)))
    if t.data_ptr() != dev.data[0]:
        raise AssertionError("torch.from_dlpack copied (%#x, frame %#x)"
                             % (t.data_ptr(), dev.data[0]))
    got = t.cpu().numpy()
    if not (got == want).all():
        raise AssertionError("frame %d: torch bytes differ" % n)
    del t, got


def check_cupy(dev, want, n):
    import cupy
    a = cupy.from_dlpack(dev)
    b = cupy.asarray(dev)               # __cuda_array_interface__
    for how, arr in (("from_dlpack", a), ("asarray", b)):
        if tuple(arr.shape) != (H, W, 4) or arr.data.ptr != dev.data[0]:
            raise AssertionError("cupy.%s: shape %s at %#x, frame %#x"
                                 % (how, arr.shape, arr.data.ptr,
                                    dev.data[0]))
        if not (arr.get() == want).all():
            raise AssertionError("frame %d: cupy.%s bytes differ" % (n, how))
    del a, b


def gpu_libs(emulated):
    """{name: reason to skip or None} for torch and cupy."""
    why = {}
    for mod in ("torch", "cupy"):
        if emulated:
            why[mod] = ("emulator run: device pointers are the cudart "
                        "emulator's host memory; %s needs a real GPU" % mod)
            continue
        try:
            m = __import__(mod)
        except Exception as e:
            why[mod] = "%s not importable: %s" % (mod, e)
            continue
        try:
            if mod == "torch":
                ok = m.cuda.is_available()
            else:
                ok = m.cuda.runtime.getDeviceCount() > 0
        except Exception as e:
            why[mod] = "%s sees no CUDA device: %s" % (mod, e)
            continue
        why[mod] = None if ok else "%s sees no CUDA device" % mod
    if os.environ.get("GPUKIT_MODE") == "gpu":
        for mod in why:
            if why[mod] and "sees no CUDA device" in why[mod]:
                why[mod] = "FAIL " + why[mod]
    return why


def mapped_cudarts():
    """The libcudart files (or the emulator) mapped in this process."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split(None, 5)[-1].strip() if "/" in line else ""
            base = os.path.basename(path)
            if (base.startswith("libcudart") or "pfemu-cudart" in base) \
                    and path not in found:
                found.append(path)
    return found


def pinnedflow_runtime():
    """What pf_cuda_runtime_get opened (its table's first field)."""
    lib = ctypes.CDLL(os.environ["PINNEDFLOW_LIBRARY"])
    fn = lib.pf_cuda_runtime_get
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                   ctypes.c_size_t]
    table, msg = ctypes.c_void_p(), ctypes.create_string_buffer(2048)
    if fn(ctypes.byref(table), msg, len(msg)) < 0 or not table.value:
        return "none (%s)" % msg.value.decode(errors="replace")
    return ctypes.cast(table.value, ctypes.POINTER(ctypes.c_char_p))[0] \
        .decode(errors="replace")


def main():
    emulated = "pfemu" in os.environ.get("GST_PINNEDFLOW_CUDART", "")
    gpu_run = os.environ.get("GPUKIT_MODE") == "gpu"
    names = ("py-upload", "torch-dlpack", "cupy", "cudart")
    if "GST_PINNEDFLOW_CUDART_PATH" not in os.environ:
        os.environ["GST_PINNEDFLOW_CUDART_PATH"] = ":".join(
            p for p in sys.path if p and os.path.isdir(p))
    # torch first, its CUDA initialised: the runtime it loaded is the one
    # pinnedflow's lookup then gets (same soname, already loaded)
    skip = gpu_libs(emulated)
    try:
        import numpy  # noqa: F401
        import pinnedflow
        import pinnedflow.cuda as pfcuda
    except Exception as e:
        for name in names:
            report(name, "fail", "import: %s" % e)
        return 1
    print("python %s, numpy %s, pinnedflow from %s" % (
        sys.version.split()[0], numpy.__version__,
        os.path.dirname(pinnedflow.__file__)), flush=True)
    try:
        up = pfcuda.Uploader(max_inflight=2, pool_size=3)
    except Exception as e:
        why = "no CUDA device for the Uploader: %s" % e
        for name in names:
            report(name, "fail" if gpu_run else "skip", why)
        return 1 if gpu_run else 0
    rts = mapped_cudarts()
    print("pinnedflow's runtime: %s; libcudart mapped: %s" % (
        pinnedflow_runtime(), ", ".join(rts) or "none"), flush=True)
    if skip["torch"] and skip["torch"].startswith("FAIL "):
        report("cudart", "fail", "%s; mapped: %s"
               % (skip["torch"][5:], ", ".join(rts)))
    elif skip["torch"]:
        report("cudart", "skip", "torch not in use (%s); mapped: %s"
               % (skip["torch"], ", ".join(rts)))
    elif len(rts) == 1:
        report("cudart", "pass", "torch and pinnedflow share %s" % rts[0])
    else:
        report("cudart", "fail", "%d libcudart files mapped: %s"
               % (len(rts), ", ".join(rts)))
    errors = {"py-upload": None, "torch-dlpack": None, "cupy": None}
    tmp = tempfile.mkdtemp(prefix="pf-gpukit-")
    pair = None
    try:
        pair = Pair(pinnedflow, os.path.join(tmp, "cam.sock"))
        for n in range(FRAMES):
            want = pattern(n)
            f = pair.send(n)
            with f, up.upload(f) as dev:
                if errors["py-upload"] is None and \
                        dev.download() != want.tobytes():
                    errors["py-upload"] = "frame %d: device bytes differ" % n
                for name, fn, mod in (("torch-dlpack", check_torch, "torch"),
                                      ("cupy", check_cupy, "cupy")):
                    if skip[mod] or errors[name]:
                        continue
                    try:
                        fn(dev, want, n)
                    except Exception as e:
                        errors[name] = "%s: %s" % (type(e).__name__, e)
                        traceback.print_exc()
        up.flush()
        st = up.stats
        print("uploader: %d frames, %d pinned copies, %d staged, %d "
              "pageable" % (st["frames"], st["pinned_copies"],
                            st["staged_copies"], st["pageable_copies"]))
    except Exception as e:
        traceback.print_exc()
        for k in errors:
            errors[k] = errors[k] or "%s: %s" % (type(e).__name__, e)
    finally:
        if pair:
            pair.close()
        up.close()
        shutil.rmtree(tmp, ignore_errors=True)
    report("py-upload", "fail" if errors["py-upload"] else "pass",
           errors["py-upload"] or "%d frames %dx%d RGBA byte-exact "
           "(DeviceFrame.download)" % (FRAMES, W, H))
    for name, mod, how in (("torch-dlpack", "torch", "torch.from_dlpack"),
                           ("cupy", "cupy", "cupy.from_dlpack+asarray")):
        if errors[name]:
            report(name, "fail", errors[name])
        elif skip[mod] and skip[mod].startswith("FAIL "):
            report(name, "fail", skip[mod][5:])
        elif skip[mod]:
            report(name, "skip", skip[mod])
        else:
            report(name, "pass", "%d frames byte-exact via %s, zero-copy"
                   % (FRAMES, how))
    return 1 if "fail" in results else 0


if __name__ == "__main__":
    sys.exit(main())
