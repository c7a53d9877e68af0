"""Speedup summary of blocktri-gpu over its GPU peers from the benchmark's rows.csv files.

    python3 docs/bench/summary.py docs/bench/horizon/rows.csv docs/bench/batch-fp64-sweep/rows.csv
"""
import csv
import sys
from collections import defaultdict

t = defaultdict(dict)
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        if r["median_ms"] and float(r["median_ms"]) > 0 and r["method"] in ("blocktri-gpu", "vendor-schur", "vendor-seq", "cudss"):
            key = (r["suite"], r["precision"], int(r["batch"]), int(r["nblocks"]), int(r["block"]), r["phase"])
            t[key][r["method"]] = float(r["median_ms"])

print("| suite | prec | S | N | n | phase | blocktri-gpu ms | vendor-schur ms | cuDSS ms | x vendor-schur | x cuDSS | targets (3x, 2x) |")
print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
for key in sorted(t, key=lambda k: (k[0], k[1], k[5], k[4], k[2], k[3])):
    row = t[key]
    if key[5] not in ("factor", "solve") or "blocktri-gpu" not in row:
        continue
    ours = row["blocktri-gpu"]
    vs = row.get("vendor-schur")
    cu = row.get("cudss")
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"
    rx = lambda v: f"{v / ours:.1f}x" if v is not None else "-"
    met = ""
    if key[5] == "factor":
        ok_v = vs is None or vs / ours >= 3
        ok_c = cu is None or cu / ours >= 2
        met = "met" if ok_v and ok_c else "missed: " + ", ".join(w for w, ok in (("3x schur", ok_v), ("2x cuDSS", ok_c)) if not ok)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {ours:.3f} | {fmt(vs)} | {fmt(cu)} | {rx(vs)} | {rx(cu)} | {met} |")
