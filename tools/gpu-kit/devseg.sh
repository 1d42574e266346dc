# The GPU kit's device-segment steps (sourced by tools/gpu-kit.sh, and by
# the kit's copy from its gpu-kit/ folder; see docs/cuda.md, "GPU kit"):
# issue 32's device frames between processes, on the real driver (or the
# driver stand-in's virtual memory, PFEMU_VMM=1, in an emulator run). Uses
# the run's exported variables (kit, B, mode, out, run_tmp, have_device,
# orig_ld).
# SPDX-License-Identifier: LGPL-2.1-or-later

# device-segments: bin/gpukit-devseg (gpu-kit/devseg.c, the flow of
# tests/cuda/test-node-device without the emulator's counters): a node
# producer with device slots -> a node consumer process, byte-exact by
# cuMemcpyDtoH, the mapping's access, hop latency and frames/s. GPU:
# 1920x1080 RGBA, 30 frames checked, 200 one at a time, 2000 streamed;
# emulator: 640x480, 10, 50, 200.
run_devseg () {
  local args rc
  if [ "$mode" = emulator ]; then
    export PFEMU_VMM=1
    args="640 480 10 50 200"
  else
    if [ "$have_device" != yes ]; then
      echo "NO CUDA DEVICE: the device step found none"
      return 77
    fi
    args="1920 1080 30 200 2000"
  fi
  # shellcheck disable=SC2086
  "$kit/bin/gpukit-devseg" $args
  rc=$?
  [ $rc -eq 0 ] || return $rc
  echo "NOTE: $(devseg_note "$out/device-segments.log")"
}

# The summary's note from gpukit-devseg's lines.
devseg_note () {
  local log=$1
  printf '%s, attr 102/103 %s/%s, consumer mapping %s, %s frames byte-exact %s, hop p50 %s us p99 %s us, %s frames/s, %s' \
    "$(sed -n 's/^device: //p' "$log")" \
    "$(sed -n 's/^attribute 102 [^:]*: //p' "$log")" \
    "$(sed -n 's/^attribute 103 [^:]*: //p' "$log")" \
    "$(sed -n 's/^access: //p' "$log")" \
    "$(sed -n 's/^consumer: \([0-9]*\) frames checked.*/\1/p' "$log")" \
    "$(sed -n 's/^rate_fps: [0-9]* ([0-9]* frames \([0-9x]*\) .*/\1/p' "$log")" \
    "$(sed -n 's/^hop_us: p50 \([0-9.]*\) .*/\1/p' "$log")" \
    "$(sed -n 's/^hop_us: p50 [0-9.]* p99 \([0-9.]*\) .*/\1/p' "$log")" \
    "$(sed -n 's/^rate_fps: \([0-9]*\) .*/\1/p' "$log")" \
    "$(sed -n 's/^released: \(all [0-9]* frames came back\).*/\1/p' "$log")"
}

# device-frames-torch: gpu-kit/devframes.py, a Python producer of device
# frames filled from PyTorch CUDA tensors (DLPack and CAI views of the
# loan) -> a Python consumer process taking each with torch.from_dlpack at
# the frame's device address (and cupy.asarray where CuPy imports),
# compared on the device. GPU: 60 frames 1920x1080 with torch (missing or
# seeing no device: a failure; left out of GPUKIT_TENSOR_BACKENDS: a skip,
# said); the driver without VMM POSIX-fd sharing: "SKIP: PARTIAL"; emulator: 20 frames 640x480 through the
# driver stand-in with ctypes (no torch there).
run_devframes () {
  local py=${GPUKIT_PYTHON:-python3} be n w h emu="" ld why log what
  log=$out/device-frames-torch.log
  what="from_dlpack at the frame's address (no copy), compared on device"
  if [ "$mode" = emulator ]; then
    be=driver n=20 w=640 h=480 emu=$B/tests/cuda/emu
    what="CAI at the frame's address, cuMemcpyDtoH (emulator: no torch)"
    export PFEMU_VMM=1
  else
    be=torch n=60 w=1920 h=1080
    if [ "$have_device" != yes ]; then
      echo "NO CUDA DEVICE: the device step found none"
      return 77
    fi
    # a host without torch says so (as for the tensor-* steps)
    case " ${GPUKIT_TENSOR_BACKENDS:-torch} " in
      *" torch "*) ;;
      *) echo "SKIP: torch not asked for: GPUKIT_TENSOR_BACKENDS=$GPUKIT_TENSOR_BACKENDS"
        return 77 ;;
    esac
  fi
  if ! command -v "$py" > /dev/null; then
    echo "SKIP: no $py on this host (GPUKIT_PYTHON)"
    return 77
  fi
  # the interpreter's own libraries (torch, CuPy): the host's path; in an
  # emulator run the driver stand-in before it
  ld=$emu${emu:+${orig_ld:+:}}$orig_ld
  if [ "$be" = torch ]; then
    why=$(env -u LD_LIBRARY_PATH ${ld:+LD_LIBRARY_PATH="$ld"} "$py" -c 'import torch, sys
if not torch.cuda.is_available():
    sys.exit("torch %s sees no CUDA device" % torch.__version__)' 2>&1) ||
      { echo "FAIL: $py: $(echo "$why" | tail -1)"; return 1; }
  fi
  env -u LD_LIBRARY_PATH ${ld:+LD_LIBRARY_PATH="$ld"} \
    PYTHONPATH="$kit/python" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PINNEDFLOW_LIBRARY="$B/lib/pinnedflow/libpinnedflow.so.0" \
    "$py" "$kit/gpu-kit/devframes.py" "$be" "$w" "$h" "$n" || return $?
  echo "NOTE: $(sed -n 's/^consumer: \(.*\); mapping \([^;]*\); \([0-9]*\) frames .*/\1; mapping \2; \3 frames/p' "$log") ${w}x$h, $what, all released, none left; $(sed -n 's/^consumer_hop_us: p50 \([0-9.]*\) .*/hop p50 \1 us/p' "$log"), $(sed -n 's/^producer_fps: \([0-9]*\) .*/\1 frames\/s with the compare/p' "$log")$(sed -n 's/^consumer: CuPy not checked: \(.*\)/; CuPy not checked: \1/p' "$log" | cut -c1-80)"
}

# domains: bin/gpukit-domains (gpu-kit/domains.c, the flows of
# tests/cuda/test-domains' `bench on` and `mixed on`, whose checks need the
# emulator's counters): "up", a host producer with domains enabled -> 4
# consumer processes of device 0 (one upload per frame, device frames,
# byte-exact by cuMemcpyDtoH in each); "down", a device producer -> 2
# consumers of device 0 (its frames, no copy) + 2 host consumers with no
# CUDA (one download per frame, byte-exact); each a checked phase, then a
# timed one: copies per frame, wall and CPU per frame. GPU: 1920x1080 RGBA,
# 30 frames checked, 300 timed; emulator: 320x240, 10 and 30 (and its
# counters of every process's copies must agree).
run_domains () {
  local args rc=0 r d
  if [ "$mode" = emulator ]; then
    export PFEMU_VMM=1
    args="320 240 10 30"
  else
    if [ "$have_device" != yes ]; then
      echo "NO CUDA DEVICE: the device step found none"
      return 77
    fi
    args="1920 1080 30 300"
  fi
  if [ ! -x "$kit/bin/gpukit-domains" ]; then
    echo "SKIP: this kit has no bin/gpukit-domains (packed before the step)"
    return 77
  fi
  for d in up down; do
    # shellcheck disable=SC2086
    "$kit/bin/gpukit-domains" $d $args
    r=$?
    if [ $r -eq 77 ]; then
      return 77     # SKIP: PARTIAL, said: the other direction cannot run either
    fi
    [ $r -eq 0 ] || rc=$r
  done
  [ $rc -eq 0 ] || return $rc
  echo "NOTE: $(domains_note up uploads "4 device"); $(domains_note down downloads "2 device + 2 host")"
}

# One direction's part of the note, from gpukit-domains' lines.
domains_note () {
  local log=$out/domains.log
  sed -n "s/^$1: copies_per_frame \([0-9.]*\) wall_us_per_frame \([0-9.]*\) producer_cpu_us_per_frame \([0-9.]*\) consumers_cpu_us_per_frame \([0-9.]*\) .*/$1: \1 $2\/frame ($3 consumers), wall \2, CPU producer \3 \/ consumers \4 us\/frame/p" "$log"
}

# summary.md's block for the two steps: what the driver said (attributes
# 102/103), the consumer's mapping, the timings, or why they failed.
devseg_summary () {
  echo "Device segments between processes (issue 32; device-segments, device-frames-torch, domains)${tag}:"
  echo
  {
    grep -E '^(device|attribute 10[23] [^:]*|segment|access|hop_us|rate_fps|released|SKIP|FAIL|NO CUDA DEVICE): |^(consumer|producer): ([0-9]|mapping)' \
      "$out/device-segments.log" | sed 's/^/device-segments: /'
    grep -E '^(consumer|producer|consumer_hop_us|producer_fps|FAIL|NO CUDA DEVICE|SKIP): ' \
      "$out/device-frames-torch.log" | sed 's/^/device-frames-torch: /'
    grep -E '^(up|down|SKIP|FAIL|NO CUDA DEVICE): ' "$out/domains.log" |
      sed 's/^/domains: /'
  } 2>/dev/null | cut -c1-300 | sed 's/^/    /'
  echo
}
