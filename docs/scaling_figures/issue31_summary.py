#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Issue 31's tables in docs/scaling.md: per op and P, every run's median (latency_us), the
# median of those, the speedup, and least-squares fits of the medians against log2 P and P.
#   issue31_summary.py 'threads-issue31-before-run[123].jsonl' 'threads-issue31-after-run[123].jsonl'
import json, sys, statistics, math, glob
def load(files):
    d = {}
    for f in files:
        for line in open(f):
            o = json.loads(line)
            if o.get('metric') != 'latency_us': continue
            d.setdefault((o['op'], o['ranks']), []).append(o['median'])
    return d
def fit(xs, ys):
    n=len(xs); mx=sum(xs)/n; my=sum(ys)/n
    sxx=sum((x-mx)**2 for x in xs); sxy=sum((x-mx)*(y-my) for x,y in zip(xs,ys))
    b=sxy/sxx; a=my-b*mx
    ss=sum((y-my)**2 for y in ys); res=sum((y-a-b*x)**2 for x,y in zip(xs,ys))
    return a,b,1-res/ss
pat_before, pat_after = sys.argv[1], sys.argv[2]
B=load(sorted(glob.glob(pat_before))); A=load(sorted(glob.glob(pat_after)))
ops=['epoch_general','epoch_depth0','am_barrier']
Ps=sorted({p for (_,p) in A})
print('| op | P | before: runs (µs) | before median | after: runs (µs) | after median | speedup |')
print('|---|---|---|---|---|---|---|')
for op in ops:
    for p in Ps:
        b=B.get((op,p),[]); a=A.get((op,p),[])
        mb=statistics.median(b); ma=statistics.median(a)
        print(f"| {op} | {p} | {' / '.join(f'{x:,.0f}' if x>=100 else f'{x:.3g}' for x in b)} | {mb:,.1f} | {' / '.join(f'{x:,.0f}' if x>=100 else f'{x:.3g}' for x in a)} | {ma:,.1f} | {mb/ma:.2f}× |")
if len(Ps) < 3:
    sys.exit(0)  # no fit over fewer than three rank counts
print()
print('| op | data | t = a + b·log2 P | R² | t = a + b·P | R² |')
print('|---|---|---|---|---|---|')
for name,D in (('before',B),('after',A)):
  for op in ops:
    xs=[p for p in Ps]; ys=[statistics.median(D[(op,p)]) for p in Ps]
    a1,b1,r1=fit([math.log2(x) for x in xs],ys); a2,b2,r2=fit(xs,ys)
    print(f"| {op} | {name} (medians of runs) | {a1:,.0f} + {b1:,.1f}·log2 P | {r1:.3f} | {a2:,.0f} + {b2:.3f}·P | {r2:.3f} |")
