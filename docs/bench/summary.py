"""Speedup summary of blocktri-gpu over its GPU peers from the benchmark's rows.csv files.

    python3 docs/bench/summary.py docs/bench/*/rows.csv

The issue's targets (factor >= 3x the vendor batched Schur, >= 2x cuDSS) are checked on
f64 factor rows; "x" columns are peer time / our time (above 1: we are faster).
"""
import csv
import sys
from collections import defaultdict

PEERS = ("vendor-schur", "vendor-seq", "cudss")
t = defaultdict(dict)
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        if r["median_ms"] and float(r["median_ms"]) > 0 and r["method"] in ("blocktri-gpu",) + PEERS:
            key = (r["suite"], r["precision"], int(r["batch"]), int(r["nblocks"]), int(r["block"]), r["phase"])
            t[key][r["method"]] = float(r["median_ms"])

print("| suite | prec | S | N | n | phase | blocktri-gpu ms | vendor-schur ms | vendor-seq ms | cuDSS ms | x schur | x seq | x cuDSS | targets (3x schur, 2x cuDSS) |")
print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
for key in sorted(t, key=lambda k: (k[0], k[1], k[5], k[2], k[4], k[3])):
    row = t[key]
    if key[5] not in ("factor", "solve") or "blocktri-gpu" not in row:
        continue
    ours = row["blocktri-gpu"]
    vs, sq, cu = (row.get(p) for p in PEERS)
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"
    rx = lambda v: (f"**{v / ours:.1f}x**" if v < ours else f"{v / ours:.1f}x") if v is not None else "-"
    met = ""
    if key[5] == "factor" and key[1] == "f64":
        ok_v = vs is None or vs / ours >= 3
        ok_c = cu is None or cu / ours >= 2
        met = "met" if ok_v and ok_c else "missed: " + ", ".join(w for w, ok in (("3x schur", ok_v), ("2x cuDSS", ok_c)) if not ok)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {ours:.3f} | {fmt(vs)} | {fmt(sq)} | {fmt(cu)} | {rx(vs)} | {rx(sq)} | {rx(cu)} | {met} |")
