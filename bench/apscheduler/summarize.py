#!/usr/bin/python3
"""Summarises a bench/apscheduler_bench.sh output folder.

Reads round-*/cronledger-workers.json (Google Benchmark), round-*/
apscheduler-throughput.jsonl and round-*/fire.jsonl; writes, in the folder:

  summary.md              medians of the rounds (min - max), ratios
  throughput-workers.dat  workers and the median jobs/s of each configuration
                          (NaN where not measured), for bench/plots/plots.sh
  fire-percentiles.dat    configuration, p50, p90, p99 (ms), for the same

and prints summary.md. Ratios are cronledger / APScheduler: above 1 means
cronledger does more jobs per second; for latencies below 1 means cronledger
starts its jobs sooner.
"""
import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]
rounds = sorted(glob.glob(os.path.join(out, 'round-*')))

thr = {}  # (config, workers) -> [jobs/s per round]
for r in rounds:
    for p in sorted(glob.glob(os.path.join(r, 'cronledger-workers*.json'))):
        for b in json.load(open(p))['benchmarks']:
            m = re.match(r'BM_DispatcherWorkers/full:(\d)/workers:(\d+)/', b['name'])
            if m and b.get('run_type', 'iteration') == 'iteration':
                cfg = 'cronledger-full' if m.group(1) == '1' else 'cronledger-normal'
                thr.setdefault((cfg, int(m.group(2))), []).append(b['items_per_second'])
    p = os.path.join(r, 'apscheduler-throughput.jsonl')
    if os.path.exists(p):
        for line in open(p):
            j = json.loads(line)
            thr.setdefault(('apscheduler-' + j['store'], j['workers']), []).append(j['jobs_per_s'])

fire = {}  # config -> {p: [per round]}
for r in rounds:
    p = os.path.join(r, 'fire.jsonl')
    if not os.path.exists(p):
        continue
    for line in open(p):
        j = json.loads(line)
        if j['bench'] == 'cronledger-fire':
            cfg = 'cronledger-' + j['synchronous'].lower()
        else:
            cfg = 'apscheduler-' + j['store']
        for k in ('min', 'p50', 'p90', 'p99', 'max'):
            fire.setdefault(cfg, {}).setdefault(k, []).append(j[k + '_ms'])

med = statistics.median
configs = ['cronledger-normal', 'cronledger-full', 'apscheduler-default', 'apscheduler-wal-full',
           'apscheduler-wal']
names = {
    'cronledger-normal': 'cronledger, WAL, synchronous NORMAL',
    'cronledger-full': 'cronledger, WAL, synchronous FULL (serve\'s default)',
    'apscheduler-default': 'APScheduler, default store (rollback journal, FULL, NullPool)',
    'apscheduler-wal-full': 'APScheduler, WAL, FULL, pooled connections',
    'apscheduler-wal': 'APScheduler, WAL, NORMAL, pooled connections (tuned)',
}
workers = sorted({w for _, w in thr})


def fmt(v):
    return '{:,.0f}'.format(v) if v >= 100 else '{:.1f}'.format(v)


def cell(vals):
    if not vals:
        return ''
    return '{} ({}–{})'.format(fmt(med(vals)), fmt(min(vals)), fmt(max(vals))) if len(vals) > 1 else fmt(vals[0])


lines = []
lines.append('# cronledger next to APScheduler on SQLite\n')
mt = os.path.join(out, 'machine.txt')
if os.path.exists(mt):
    lines.append('```\n' + open(mt).read().strip() + '\n```\n')
probes = []
for i, r in enumerate(rounds, 1):
    p = os.path.join(r, 'fsync.jsonl')
    if os.path.exists(p):
        v = [json.loads(l) for l in open(p)]
        probes.append('round {}: fdatasync median {} ms (probes from {:.2f} to {:.2f} ms), load {:.1f} to {:.1f}'.format(
            i, round(med(x['p50_ms'] for x in v), 2), min(x['p50_ms'] for x in v),
            max(x['p50_ms'] for x in v), min(x['load'] for x in v), max(x['load'] for x in v)))
if probes:
    lines.append('The disk and the load during the rounds (aps_bench.py fsync before each worker '
                 'count and each fire pair: 200 fdatasyncs of 16 KiB under /tmp):\n')
    lines.extend('- ' + x for x in probes)
    lines.append('')
lines.append('## Throughput of no-op jobs (jobs/s; median of {} rounds, min–max)\n'.format(len(rounds)))
lines.append('| workers | ' + ' | '.join(names[c] for c in configs) + ' |')
lines.append('| --- ' * (len(configs) + 1) + '|')
for w in workers:
    lines.append('| {} | '.format(w) + ' | '.join(cell(thr.get((c, w), [])) for c in configs) + ' |')


def m(c, w):
    v = thr.get((c, w))
    return med(v) if v else None


def best(c):
    cands = [(med(v), w) for (cc, w), v in thr.items() if cc == c]
    return max(cands) if cands else (None, None)


lines.append('\nRatios cronledger / APScheduler (jobs/s; above 1: cronledger faster):\n')
def paired(a, b):
    """Median over the rounds of the ratio measured within each round."""
    va, vb = thr.get(a, []), thr.get(b, [])
    if not va or len(va) != len(vb):
        return None
    return med(x / y for x, y in zip(va, vb))


pairs = [
    ('defaults: cronledger FULL, 8 workers / APScheduler default store, 10 workers',
     m('cronledger-full', 8), m('apscheduler-default', 10),
     paired(('cronledger-full', 8), ('apscheduler-default', 10))),
    ('same durability (WAL, FULL), 8 workers each', m('cronledger-full', 8), m('apscheduler-wal-full', 8),
     paired(('cronledger-full', 8), ('apscheduler-wal-full', 8))),
    ('same durability (WAL, NORMAL), 8 workers each', m('cronledger-normal', 8), m('apscheduler-wal', 8),
     paired(('cronledger-normal', 8), ('apscheduler-wal', 8))),
    ('cronledger FULL / APScheduler default store, 1 worker each', m('cronledger-full', 1),
     m('apscheduler-default', 1), paired(('cronledger-full', 1), ('apscheduler-default', 1))),
    ('cronledger FULL / APScheduler default store, 16 workers each', m('cronledger-full', 16),
     m('apscheduler-default', 16), paired(('cronledger-full', 16), ('apscheduler-default', 16))),
]
bn, bnw = best('cronledger-normal')
ba, baw = best('apscheduler-wal')
bf, bfw = best('cronledger-full')
bd, bdw = best('apscheduler-default')
pairs.append(('best of each: cronledger NORMAL ({} workers) / APScheduler tuned WAL NORMAL ({} workers)'.format(bnw, baw), bn, ba, None))
pairs.append(('best of each at FULL: cronledger ({} workers) / APScheduler default store ({} workers)'.format(bfw, bdw), bf, bd, None))
lines.append('| comparison | cronledger | APScheduler | ratio of the medians | median of the per-round ratios |')
lines.append('| --- | --- | --- | --- | --- |')
for label, a, b, pr in pairs:
    if a and b:
        lines.append('| {} | {} | {} | **{:.2f}** | {} |'.format(label, fmt(a), fmt(b), a / b,
                                                          '{:.2f}'.format(pr) if pr else ''))

lines.append('\n## Fire latency: 1,000 jobs due at one instant, scheduled instant to start (ms)\n')
lines.append('Each round\'s figure is the median over its measured occurrences; the table gives '
             'the median of the rounds (min–max).\n')
lines.append('| configuration | p50 | p90 | p99 | max |')
lines.append('| --- | --- | --- | --- | --- |')
fire_cfgs = ['cronledger-normal', 'cronledger-full', 'apscheduler-default', 'apscheduler-wal']
for c in fire_cfgs:
    if c in fire:
        lines.append('| {} | '.format(names[c]) + ' | '.join(cell(fire[c][k]) for k in ('p50', 'p90', 'p99', 'max')) + ' |')
lines.append('\nRatios cronledger / APScheduler (latency; below 1: cronledger starts sooner; the ratio of '
             'the medians, in brackets the median of the per-round ratios, each round measuring the '
             'pair back to back):\n')
lines.append('| comparison | p50 | p90 | p99 |')
lines.append('| --- | --- | --- | --- |')
for a, b, label in [('cronledger-full', 'apscheduler-default', 'cronledger FULL / APScheduler default store'),
                    ('cronledger-normal', 'apscheduler-wal', 'cronledger NORMAL / APScheduler tuned WAL NORMAL')]:
    if a in fire and b in fire:
        cells = []
        for k in ('p50', 'p90', 'p99'):
            c = '**{:.3f}**'.format(med(fire[a][k]) / med(fire[b][k]))
            if len(fire[a][k]) == len(fire[b][k]):
                c += ' ({:.3f})'.format(med(x / y for x, y in zip(fire[a][k], fire[b][k])))
            cells.append(c)
        lines.append('| {} | '.format(label) + ' | '.join(cells) + ' |')

text = '\n'.join(lines) + '\n'
open(os.path.join(out, 'summary.md'), 'w').write(text)
print(text)

with open(os.path.join(out, 'throughput-workers.dat'), 'w') as f:
    f.write('# workers ' + ' '.join(configs) + '  (median jobs/s; NaN: not measured)\n')
    for w in workers:
        f.write('{} '.format(w) + ' '.join(
            '{:.1f}'.format(m(c, w)) if m(c, w) else 'NaN' for c in configs) + '\n')
labels = {'cronledger-normal': '"cronledger SQLite\\nWAL, NORMAL\\n(this run)"',
          'cronledger-full': '"cronledger SQLite\\nWAL, FULL\\n(this run)"',
          'apscheduler-default': '"APScheduler\\ndefault store\\n(this run)"',
          'apscheduler-wal': '"APScheduler\\nWAL, NORMAL, pooled\\n(this run)"'}
with open(os.path.join(out, 'fire-percentiles.dat'), 'w') as f:
    f.write('# configuration p50 p90 p99 (ms, median of the rounds)\n')
    for c in fire_cfgs:
        if c in fire:
            f.write('{} {:.2f} {:.2f} {:.2f}\n'.format(labels[c], *(med(fire[c][k]) for k in ('p50', 'p90', 'p99'))))
