/* emu_runtime.cpp — the launches of tools/cuda_emu (see run): one block after
 * another, each block's threads as std::threads. */
#include "cuda_common.h"
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
thread_local EmuBlock *emu_blk;
void emu_launch(dim3 g, dim3 b, const std::function<void()> &f)
{
    gridDim = g;
    blockDim = b;
    const int nt = (int)(b.x * b.y * b.z);
    if (nt > 1024 || nt < 1) abort();
    for (unsigned by = 0; by < g.y; by++)
        for (unsigned bx = 0; bx < g.x; bx++) {
            EmuBlock blk;
            std::barrier<> bar(nt);
            blk.block_bar = &bar;
            for (int w = 0; w * 32 < nt; w++)
                blk.warp_bar.emplace_back(new std::barrier<>(nt - w * 32 < 32 ? nt - w * 32 : 32));
            std::vector<std::thread> ts;
            for (int t = 0; t < nt; t++)
                ts.emplace_back([&, t] {
                    emu_blk = &blk;
                    blockIdx = dim3(bx, by, 0);
                    threadIdx = dim3(t % b.x, (t / b.x) % b.y, 0);
                    f();
                });
            for (auto &th : ts) th.join();
        }
}
/* the fake backend's run_end (run edits spec/fixtures/fake_cuda_backend.c to
 * call it): device.cu's own run-wide range checks */
extern "C" int emu_run_end(int device) { return oarcu::run_checks_end(device); }
