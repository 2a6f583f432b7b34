#!/usr/bin/env python3
# Does a memory-bound kernel's time depend on where its buffers land? Time torch.sum over dim 1
# and torch.cumsum of fresh allocations after allocating junk of random sizes in between.
import torch, random
random.seed(1)
def bench(fn, n=20):
    s = [torch.cuda.Event(enable_timing=True) for _ in range(n)]; e = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    fl = torch.empty(64 << 20, dtype=torch.int32, device='cuda')
    for _ in range(3): fn()
    for i in range(n):
        fl.zero_(); s[i].record(); fn(); e[i].record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in zip(s, e))
    return t[n // 2], t[n // 10], t[9 * n // 10]
for trial in range(8):
    junk = [torch.empty(random.randint(1, 2000) << 20, dtype=torch.uint8, device='cuda') for _ in range(random.randint(0, 6))]
    x = torch.rand(128, 4096, 4095, device='cuda'); y = torch.empty(128, 4095, device='cuda')
    a = bench(lambda: torch.sum(x, dim=1, out=y))
    del x, y
    c = torch.rand(32768, 32768, device='cuda'); d = torch.empty_like(c)
    b = bench(lambda: torch.cumsum(c, dim=1, out=d))
    del c, d
    print(f"trial {trial}: junk {len(junk)} sum {a[0]:.3f} ({a[1]:.3f}-{a[2]:.3f}) ms, cumsum {b[0]:.3f} ({b[1]:.3f}-{b[2]:.3f}) ms", flush=True)
    del junk
    torch.cuda.empty_cache()
