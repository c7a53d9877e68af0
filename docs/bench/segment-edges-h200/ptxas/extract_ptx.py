import sys,re
src,out,names=sys.argv[1],sys.argv[2],sys.argv[3].split(',')
lines=open(src).read().split('\n')
# split into top-level chunks: each chunk starts at a line beginning with '.' or '//' at column 0 or is inside braces
chunks=[];cur=[];depth=0
for l in lines:
    cur.append(l)
    depth+=l.count('{')-l.count('}')
    if depth==0 and (l.strip().endswith(';') or l.strip()=='}' or l.strip()=='' ):
        chunks.append('\n'.join(cur)); cur=[]
if cur: chunks.append('\n'.join(cur))
header=[];decls=[];defs={};entries={}
for c in chunks:
    s=c.strip()
    body='{' in c
    m=re.search(r'\.(?:visible )?\.?(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z0-9_$]+)',c)
    if s.startswith('.version') or s.startswith('.target') or s.startswith('.address_size'):
        header.append(c); continue
    if m and body:
        (entries if m.group(1)=='entry' else defs)[m.group(2)]=c
    elif m or '.shared' in s or '.global' in s or '.const' in s:
        decls.append(c)
need=set();todo=[entries[n] for n in names]
while todo:
    c=todo.pop()
    for f in re.findall(r'call(?:\.uni)?\s*(?:\([^)]*\),\s*)?\s*([A-Za-z0-9_$]+)',c):
        if f in defs and f not in need: need.add(f); todo.append(defs[f])
def keep(c):
    m=re.search(r'\.func\s+(?:\([^)]*\)\s*)?([A-Za-z0-9_$]+)',c)
    return not m or m.group(1) in need
decls=[c for c in decls if keep(c)]
open(out,'w').write('\n'.join(header+decls+[defs[f] for f in need]+[entries[n] for n in names])+'\n')
print(out, sorted(need))
