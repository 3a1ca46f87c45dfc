#!/bin/bash
# run.sh: the GPU checks of issue 29 (run --gpu, --nvtx with the recording NVTX
# tool, nsys where it works), on a machine with a GPU, from the folder that
# scripts/gpu/bundle.sh made: bash .gpu/run.sh; its output and files go to $OUT.
B=$(pwd)/.gpu   # made by scripts/gpu/bundle.sh
export PYTHONHOME=$B/py LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:/usr/bin:/bin
unset VIRTUAL_ENV
SP=$B/bin/scope-profiler
W=/tmp/w; mkdir -p $W; cd $OUT
{
nvidia-smi -L; nvcc --version | tail -1
nvcc -O2 -shared -Xcompiler -fPIC --cudart shared -o $W/kernel.so $B/kernel.cu || exit 1
INC=$(dirname $(readlink -f $(which nvcc)))/../include
cc -shared -fPIC -O2 -pthread -idirafter $INC -o $W/nvtx_tool.so $B/nvtx_tool.c || exit 1
export KERNEL_SO=$W/kernel.so
echo "== run --gpu"; $SP run --gpu -o gpu.h5 $B/gpu_check.py; echo "status $?"
echo "== run (no --gpu)"; $SP run -o nogpu.h5 $B/gpu_check.py; echo "status $?"
echo "== run --nvtx --gpu, the recording NVTX tool injected"
NVTX_INJECTION64_PATH=$W/nvtx_tool.so NVTX_TOOL_LOG=$OUT/nvtx.log $SP run -q --nvtx --gpu -o nv.h5 $B/gpu_check.py; echo "status $?"
$SP summary --flat nv.h5 | tail -4
echo "nvtx pushes:"; awk '$1=="push"{print $4}' nvtx.log | sort | uniq -c; echo "pops: $(grep -c '^pop' nvtx.log)"
$SP export --format json gpu.h5 > /dev/null && echo export-ok
N=$(ls /opt/nvidia/nsight-systems/*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
echo "nsys: ${N:-none}"
if [ -n "$N" ]; then timeout 100 $N profile -t nvtx,cuda -o $W/rep --force-overwrite true $SP run -q --nvtx -o ns.h5 $B/gpu_check.py; echo "nsys status $?"; ls -la $W/rep* 2>&1
  timeout 60 $N stats -r nvtx_sum $W/rep.nsys-rep 2>&1 | tail -15; fi
} 2>&1 | tee $OUT/log
