import sys, collections
f = sys.argv[1]
rows = [l.split() for l in open(f) if l.startswith('NODE')]
recs = []
for r in rows:
    m,t,b,sm = map(int, r[1:5]); g = list(map(int, r[5:9])); d = list(map(int, r[9:15]))
    recs.append((m,t,b,sm,g,d))
g0min = min(r[4][0] for r in recs)
bylev = collections.defaultdict(list)
done = {}
for m,t,b,sm,g,d in recs:
    bylev[m].append((g,d,b)); done[b+1] = g[3]
print("lvl nodes | start..deps-met(us) body(us) publish(us) | cycles: load regs chol solve+store prod rest | end(us) | handoff(us)")
for m in sorted(bylev):
    L = bylev[m]
    n = len(L)
    avg = lambda k: sum(x[0][k] for x in L)/n
    dav = [sum(x[1][i] for x in L)/n for i in range(6)]
    end = max(x[0][3] for x in L) - g0min
    # handoff: for nodes of the level, deps-met time minus latest publish among the node's children (b +- 2^(m-1))
    hs = []
    for g,d,b in L:
        i = b+1; c = [i-(1<<(m-1)), i+(1<<(m-1))]
        ts = [done[x] for x in c if x in done]
        if ts: hs.append(g[1]-max(ts))
    h = sum(hs)/len(hs)/1000 if hs else float('nan')
    print(f"{m:3d} {n:5d} | {(avg(1)-avg(0))/1000:7.2f} {(avg(2)-avg(1))/1000:6.2f} {(avg(3)-avg(2))/1000:6.2f} | " + " ".join(f"{x:6.0f}" for x in dav) + f" | {end/1000:8.2f} | {h:6.2f}")
