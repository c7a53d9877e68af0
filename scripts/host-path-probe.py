#!/usr/bin/env python3
"""Where does the staged host->device pipeline lose its time? (docs/perf-notes.md, entry 6)

Runs on the GPU machine with PyTorch only (no build needed): measures the pinned DMA
alone, the CPU copies alone, both at once (does a CPU copy slow the DMA engine down, or
the other way round?), and the staging ring of `host/src/cuda/transfer.rs` re-created with
torch (3 pinned 8 MiB slots, CPU copy into a slot, async copy, event), in several
variants. Prints GB/s; every figure is the best of 5 runs after a warm-up.
"""
import os
import threading
import time

import torch

MIB = 1 << 20
TOTAL = 256 * MIB


def best(fn, reps=5):
    fn()
    t = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        s = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t = min(t, time.perf_counter() - s)
    return t


def gbs(nbytes, t):
    return nbytes / t / 1e9


def while_copying(copy, nbytes, timed):
    """Times `timed` (best of 8) while another thread repeats `copy` (which moves `nbytes`);
    returns (seconds, GB/s of the background copy meanwhile)."""
    stop = threading.Event()
    copied = [0]

    def loop():
        while not stop.is_set():
            copy()
            copied[0] += nbytes

    th = threading.Thread(target=loop)
    th.start()
    time.sleep(0.05)
    c0, s0 = copied[0], time.perf_counter()
    t = best(timed, reps=8)
    c1, s1 = copied[0], time.perf_counter()
    stop.set()
    th.join()
    return t, gbs(c1 - c0, s1 - s0)


def main():
    torch.set_num_threads(int(os.environ.get("THREADS", "8")))
    print("cpus", os.cpu_count(), "torch threads", torch.get_num_threads())
    for p in ["/sys/devices/system/node/online", "/proc/sys/kernel/numa_balancing"]:
        if os.path.exists(p):
            print(p, open(p).read().strip())
    with open("/proc/meminfo") as f:
        for line in f:
            if line.split(":")[0] in ("MemTotal", "MemFree", "AnonHugePages", "Hugepagesize"):
                print(line.strip())
    src = torch.arange(TOTAL // 8, dtype=torch.float64).view(torch.uint8)  # pageable, touched
    dst = torch.empty_like(src)
    dst.fill_(1)
    pinned = torch.empty(TOTAL, dtype=torch.uint8).pin_memory()
    pinned.fill_(2)
    pinned2 = torch.empty(TOTAL, dtype=torch.uint8).pin_memory()
    pinned2.fill_(3)
    dev = torch.empty(TOTAL, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    rows = []

    def dma():
        with torch.cuda.stream(stream):
            dev.copy_(pinned, non_blocking=True)
        stream.synchronize()

    rows.append(("DMA H2D pinned, one 256 MiB copy", gbs(TOTAL, best(dma))))

    def dma_d2h():
        with torch.cuda.stream(stream):
            pinned.copy_(dev, non_blocking=True)
        stream.synchronize()

    rows.append(("DMA D2H pinned, one 256 MiB copy", gbs(TOTAL, best(dma_d2h))))
    rows.append(("CPU copy pageable->pageable", gbs(TOTAL, best(lambda: dst.copy_(src)))))
    rows.append(("CPU copy pageable->pinned", gbs(TOTAL, best(lambda: pinned2.copy_(src)))))
    rows.append(("CPU copy pinned->pageable", gbs(TOTAL, best(lambda: dst.copy_(pinned2)))))

    # Both at once: a background thread copies on the CPU while the main thread times DMAs.
    for what, a, b in [("pageable->pageable", dst, src), ("pageable->pinned(other)", pinned2, src)]:
        t, rate = while_copying(lambda: a.copy_(b), TOTAL, dma)
        rows.append((f"DMA H2D pinned while CPU copies {what}", gbs(TOTAL, t)))
        rows.append((f"  ... CPU copy rate meanwhile ({what})", rate))

    # The staging ring as transfer.rs builds it, with torch.
    def staged(chunk, slots_n):
        slots = [torch.empty(chunk, dtype=torch.uint8).pin_memory() for _ in range(slots_n)]
        for s in slots:
            s.fill_(0)
        events = [None] * slots_n

        def run():
            pieces = range(0, TOTAL, chunk)
            for i, off in enumerate(pieces):
                k = i % slots_n
                if events[k] is not None:
                    events[k].synchronize()
                n = min(chunk, TOTAL - off)
                slots[k][:n].copy_(src[off:off + n])
                with torch.cuda.stream(stream):
                    dev[off:off + n].copy_(slots[k][:n], non_blocking=True)
                    ev = torch.cuda.Event()
                    ev.record(stream)
                events[k] = ev
            stream.synchronize()

        return gbs(TOTAL, best(run))

    for chunk, slots_n in [(8 * MIB, 3), (8 * MIB, 8), (32 * MIB, 3), (2 * MIB, 4)]:
        rows.append((f"staged H2D, {chunk // MIB} MiB x {slots_n} slots", staged(chunk, slots_n)))

    # Staging where the CPU copy of piece i+1 and the DMA of piece i are timed separately.
    chunk = 8 * MIB
    slot = torch.empty(chunk, dtype=torch.uint8).pin_memory()
    t_copy = best(lambda: [slot.copy_(src[o:o + chunk]) for o in range(0, TOTAL, chunk)])
    rows.append(("CPU copy into one 8 MiB pinned slot, repeated", gbs(TOTAL, t_copy)))

    def dma_pieces():
        with torch.cuda.stream(stream):
            for o in range(0, TOTAL, chunk):
                dev[o:o + chunk].copy_(slot, non_blocking=True)
        stream.synchronize()

    rows.append(("DMA H2D from one 8 MiB pinned slot, repeated", gbs(TOTAL, best(dma_pieces))))

    # DMA of the slot repeated while the CPU keeps rewriting the same slot (the staging's
    # access pattern without the waits; the data are garbage, only the rates count).
    t, rate = while_copying(lambda: slot.copy_(src[:chunk]), chunk, dma_pieces)
    rows.append(("DMA from the slot while the CPU rewrites it", gbs(TOTAL, t)))
    rows.append(("  ... CPU rewrite rate meanwhile", rate))

    for what, v in rows:
        print(f"{what:55s} {v:7.1f} GB/s")


if __name__ == "__main__":
    main()
