import sys, collections
# average the top `k` levels' nodes over the given files
files = sys.argv[2:]; k = int(sys.argv[1])
acc = collections.defaultdict(list)
hand = []
for f in files:
    rows = [l.split() for l in open(f) if l.startswith('NODE')]
    done = {}
    recs = []
    for r in rows:
        m,t,b = int(r[1]),int(r[2]),int(r[3]); g=list(map(int,r[5:9])); d=list(map(int,r[9:16]))
        done[b+1]=g[3]; recs.append((m,b,g,d))
    levels = sorted(set(x[0] for x in recs))[-k:]
    for m,b,g,d in recs:
        if m in levels:
            acc['body_ns'].append(g[2]-g[1]); acc['publish_ns'].append(g[3]-g[2])
            for i,name in enumerate(['load','regs','chol','solve','prod','rest','loadsback']):
                acc[name].append(d[i])
            i=b+1; c=[i-(1<<(m-1)), i+(1<<(m-1))]; ts=[done[x] for x in c if x in done]
            if ts: hand.append(g[1]-max(ts))
med = lambda v: sorted(v)[len(v)//2]
print(" ".join(f"{n}={med(v)}" for n,v in acc.items()), "handoff_ns=", med(hand) if hand else None, "nodes=", len(acc['load']))
