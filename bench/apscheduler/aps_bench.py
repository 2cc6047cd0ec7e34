#!/usr/bin/python3
"""APScheduler 3 (Debian's python3-apscheduler) as cronledger's single-node peer.

Two measurements, each on a fresh SQLite file in its own /tmp folder, through
APScheduler's BackgroundScheduler with its SQLAlchemyJobStore and
ThreadPoolExecutor, no-op job functions, and the real clock:

  throughput --jobs N --workers W [--store default|wal|wal-full]
      N one-shot jobs (DateTrigger), all due, executed by a ThreadPoolExecutor
      of W threads (APScheduler's default is 10). The jobs are written to the
      job store while the scheduler is paused (untimed; one transaction, the
      rows the store's own add_job writes); the clock starts at resume() and
      stops when every job function has run AND the store holds no job any
      more (APScheduler deletes a one-shot job's row after submitting it: its
      one write per job). jobs/s = N / that time.

  fire --jobs N --occurrences K [--workers W] [--store default|wal|wal-full]
      K + 1 bursts (the first a warm-up) of N one-shot jobs (DateTrigger) due
      at one instant, 3 s after they are written to the running scheduler's
      store; the next burst is written when every job of the last one has
      started and left the store. Per burst: min, p50, p90, p99 and max of the
      time from the instant to the job's start (taken in the executor thread
      right before APScheduler's run_job, which checks the misfire grace time
      and calls the function). The summary is the median over the bursts.
      (Not a cron trigger every 10 s as bench/fire_latency_bench.cc's
      `*/10 * * * * *`: with the default store 1,000 jobs take longer than
      10 s to dispatch here, so occurrences would overlap and be coalesced.)

Both set misfire_grace_time=None (APScheduler's default of 1 s would drop late
jobs as "missed" instead of running them; cronledger runs every due run) and
keep coalesce and max_instances at their defaults (each job id is distinct).

--store default: SQLAlchemyJobStore(url='sqlite:///FILE'), APScheduler's
documented setup: SQLite's defaults (rollback journal, synchronous=FULL) and
SQLAlchemy 1.4's pool for a file database (NullPool: a new connection per
statement). --store wal: the same store on an engine that keeps its
connections (QueuePool) and sets journal_mode=WAL and synchronous=NORMAL,
what a user tuning it for speed would do; --store wal-full: the same with
synchronous=FULL (cronledger's default durability: WAL, FULL).

  fsync [--calls N]
      the disk's fdatasync latency (16 KiB writes under /tmp), median and p90:
      on this shared machine it swings by ten times with other work, and every
      store measured here waits for it.

Prints one JSON object per measurement on stdout; progress on stderr.
"""
import argparse
import json
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone

import apscheduler
import sqlalchemy
from apscheduler.executors import pool as aps_pool
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.util import datetime_to_utc_timestamp
from sqlalchemy import create_engine, event

UTC = timezone.utc
STORES = ['default', 'wal', 'wal-full']

_lock = threading.Lock()
_executed = 0
_all_done = threading.Event()
_target = 0


def noop():
    """The throughput job: does nothing but count itself."""
    global _executed
    with _lock:
        _executed += 1
        if _executed == _target:
            _all_done.set()


def noop_fire():
    """The fire-latency job: does nothing (its start is recorded by the wrapper)."""


# Start times for the fire benchmark, recorded in the executor thread just
# before APScheduler's run_job (which checks the misfire grace time, logs at
# info level and calls the function).
_starts = []  # (scheduled epoch seconds, start epoch seconds)
_real_run_job = aps_pool.run_job


def _timed_run_job(job, jobstore_alias, run_times, logger_name):
    t = time.time()
    with _lock:
        for rt in run_times:
            _starts.append((rt.timestamp(), t))
    return _real_run_job(job, jobstore_alias, run_times, logger_name)


def make_store(path, kind):
    url = 'sqlite:///' + path
    if kind == 'default':
        return SQLAlchemyJobStore(url=url)
    # A pool that keeps its connections: with SQLAlchemy 1.4's NullPool every
    # statement opens a connection and closing the last one checkpoints the
    # WAL and deletes it (an fsync per job).
    sync = 'FULL' if kind == 'wal-full' else 'NORMAL'
    engine = create_engine(url, poolclass=sqlalchemy.pool.QueuePool, pool_size=4,
                           connect_args={'check_same_thread': False})

    @event.listens_for(engine, 'connect')
    def _pragmas(dbapi_conn, _record):
        cur = dbapi_conn.cursor()
        cur.execute('PRAGMA journal_mode=WAL')
        cur.execute('PRAGMA synchronous=' + sync)
        cur.close()

    return SQLAlchemyJobStore(engine=engine)


def pragmas(store):
    with store.engine.connect() as c:
        jm = c.exec_driver_sql('PRAGMA journal_mode').scalar()
        sy = c.exec_driver_sql('PRAGMA synchronous').scalar()
    return {'journal_mode': jm, 'synchronous': sy,
            'pool': type(store.engine.pool).__name__}


def bulk_copy(scheduler, staging, store):
    """Moves the staged jobs into the SQL store in one transaction: the same
    rows (id, next_run_time, pickled job state) its add_job inserts one
    transaction at a time."""
    jobs = staging.get_all_jobs()
    rows = [{'id': j.id,
             'next_run_time': datetime_to_utc_timestamp(j.next_run_time),
             'job_state': pickle.dumps(j.__getstate__(), store.pickle_protocol)}
            for j in jobs]
    with store.engine.begin() as conn:
        conn.execute(store.jobs_t.insert(), rows)
    staging.remove_all_jobs()
    return len(rows)


def store_count(store):
    with store.engine.connect() as c:
        return c.execute(sqlalchemy.select(sqlalchemy.func.count()).select_from(store.jobs_t)).scalar()


def versions():
    return {'apscheduler': apscheduler.__version__, 'sqlalchemy': sqlalchemy.__version__,
            'sqlite': __import__('sqlite3').sqlite_version,
            'python': sys.version.split()[0]}


def load():
    return os.getloadavg()[0]


def make_scheduler(store, workers):
    # The store under test, and a memory store to stage jobs in (bulk_copy).
    return BackgroundScheduler(
        jobstores={'default': store, 'staging': MemoryJobStore()},
        executors={'default': ThreadPoolExecutor(workers)},
        job_defaults={'misfire_grace_time': None}, timezone=UTC)


def throughput(args):
    global _executed, _target
    d = tempfile.mkdtemp(prefix='aps-bench-')
    try:
        store = make_store(os.path.join(d, 'jobs.sqlite'), args.store)
        sched = make_scheduler(store, args.workers)
        sched.start(paused=True)
        due = datetime.now(UTC) - timedelta(seconds=1)
        for i in range(args.jobs):
            sched.add_job(noop, 'date', run_date=due, id='j%06d' % i, jobstore='staging')
        n = bulk_copy(sched, sched._jobstores['staging'], store)
        sched.remove_jobstore('staging')
        assert n == args.jobs and store_count(store) == args.jobs
        info = pragmas(store)
        _executed, _target = 0, args.jobs
        _all_done.clear()
        l0 = load()
        t0 = time.perf_counter()
        sched.resume()
        if not _all_done.wait(args.timeout):
            raise SystemExit('aps_bench: only %d of %d jobs ran in %d s' % (_executed, args.jobs, args.timeout))
        t_exec = time.perf_counter() - t0
        while store_count(store) > 0:
            if time.perf_counter() - t0 > args.timeout:
                raise SystemExit('aps_bench: the store still holds jobs')
            time.sleep(0.002)
        t_all = time.perf_counter() - t0
        sched.shutdown(wait=True)
        out = {'bench': 'apscheduler-throughput', 'jobs': args.jobs, 'workers': args.workers,
               'store': args.store, 'seconds': round(t_all, 4),
               'jobs_per_s': round(args.jobs / t_all, 1),
               'executed_seconds': round(t_exec, 4), 'executed': _executed,
               'load_start': l0, **info, **versions()}
        print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]  # as fire_latency_bench.cc's Percentile


def fire(args):
    aps_pool.run_job = _timed_run_job
    d = tempfile.mkdtemp(prefix='aps-fire-')
    try:
        store = make_store(os.path.join(d, 'jobs.sqlite'), args.store)
        sched = make_scheduler(store, args.workers)
        sched.start()
        staging = sched._jobstores['staging']
        info = pragmas(store)
        l0 = load()
        bursts = []
        for k in range(args.occurrences + 1):  # burst 0 is the warm-up
            # The burst's instant: 3 s after the jobs are in the store (one
            # transaction, the rows add_job writes; then wakeup(), as add_job
            # does, so that the scheduler sleeps until the instant).
            at = datetime.fromtimestamp(int(time.time()) + 3, UTC)
            for i in range(args.jobs):
                sched.add_job(noop_fire, 'date', run_date=at, id='b%d-%04d' % (k, i),
                              jobstore='staging')
            bulk_copy(sched, staging, store)
            sched.wakeup()
            ts = at.timestamp()
            deadline = ts + 600
            while True:
                with _lock:
                    n = sum(1 for s, _ in _starts if s == ts)
                if n >= args.jobs and store_count(store) == 0:
                    break
                if time.time() > deadline:
                    raise SystemExit('aps_bench: burst %d never completed (%d of %d started)' % (k, n, args.jobs))
                time.sleep(0.05)
            bursts.append(ts)
        sched.shutdown(wait=True)
        by = {}
        for s, t in _starts:
            by.setdefault(s, []).append((t - s) * 1000.0)
        occ = []
        for s in bursts:
            v = by[s]
            row = {'at': datetime.fromtimestamp(s, UTC).strftime('%H:%M:%S'), 'runs': len(v),
                   'min': min(v), 'p50': pct(v, .5), 'p90': pct(v, .9), 'p99': pct(v, .99),
                   'max': max(v), 'warmup': s == bursts[0]}
            occ.append(row)
            print('%s %5d runs  min %8.2f  p50 %8.2f  p90 %8.2f  p99 %8.2f  max %8.2f ms%s' % (
                row['at'], row['runs'], row['min'], row['p50'], row['p90'], row['p99'], row['max'],
                '  (warm-up)' if row['warmup'] else ''), file=sys.stderr)
        meas = [o for o in occ if not o['warmup']]
        bad = [o for o in occ if o['runs'] != args.jobs]
        if bad:
            raise SystemExit('aps_bench: bursts with a wrong number of starts: %r' % bad)
        early = [o for o in occ if o['min'] < 0]
        if early:
            raise SystemExit('aps_bench: jobs started before their instant: %r' % early)
        med = {k: statistics.median(o[k] for o in meas) for k in ('min', 'p50', 'p90', 'p99', 'max')}
        out = {'bench': 'apscheduler-fire', 'jobs': args.jobs, 'workers': args.workers,
               'store': args.store, 'occurrences': len(meas),
               **{k + '_ms': round(v, 2) for k, v in med.items()},
               'per_occurrence': [{k: (round(v, 2) if isinstance(v, float) else v)
                                   for k, v in o.items()} for o in occ],
               'load_start': l0, **info, **versions()}
        print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fsync_probe(args):
    """The disk's own latency right now: 200 fdatasync calls of 16 KiB under
    /tmp (as bench/effect_bench.cc prints), median and p90 in ms."""
    fd, path = tempfile.mkstemp(prefix='aps-fsync-', dir='/tmp')
    try:
        buf = os.urandom(16384)
        v = []
        for i in range(args.calls):
            os.pwrite(fd, buf, (i % 16) * 16384)
            t = time.perf_counter()
            os.fdatasync(fd)
            v.append((time.perf_counter() - t) * 1000.0)
        print(json.dumps({'bench': 'fsync', 'label': args.label, 'calls': args.calls,
                          'p50_ms': round(pct(v, .5), 3), 'p90_ms': round(pct(v, .9), 3),
                          'load': load()}), flush=True)
    finally:
        os.close(fd)
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    t = sub.add_parser('throughput')
    t.add_argument('--jobs', type=int, default=20000)
    t.add_argument('--workers', type=int, default=10)
    t.add_argument('--store', choices=STORES, default='default')
    t.add_argument('--timeout', type=int, default=1800)
    f = sub.add_parser('fire')
    f.add_argument('--jobs', type=int, default=1000)
    f.add_argument('--occurrences', type=int, default=6)
    f.add_argument('--workers', type=int, default=10)
    f.add_argument('--store', choices=STORES, default='default')
    q = sub.add_parser('fsync')
    q.add_argument('--calls', type=int, default=200)
    q.add_argument('--label', default='')
    a = ap.parse_args()
    {'throughput': throughput, 'fire': fire, 'fsync': fsync_probe}[a.cmd](a)


if __name__ == '__main__':
    main()
