// cronledger dashboard: a single page with hash routes over the JSON API
// (docs/dashboard.md). Vanilla JS, no dependencies, nothing from a CDN.
//
// Every value from the ledger reaches the page as text (text nodes,
// textContent, attribute values): job names, partitions, reasons and logs
// are user input, and none of them is ever parsed as HTML.
'use strict';

(() => {
  const POLL_MS = 3000;
  const GRID_DAYS = 14;
  const CHART_DAYS = 30;

  let session = null;  // {token_name, role, csrf_token, expires_at}
  let pollTimer = null;
  let renderSeq = 0;

  // ---- DOM helpers -------------------------------------------------------------

  // el('td', {class: 'num'}, 'text', childNode, ...): children that are not
  // nodes become text nodes.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  const SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }
  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        node.addEventListener(k.slice(2), v);
      } else {
        node.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }
  const $ = (id) => document.getElementById(id);

  function showBanner(text, ok) {
    const b = $('banner');
    b.textContent = text;
    b.className = ok ? 'banner ok' : 'banner';
    b.hidden = !text;
  }

  // ---- formatting ----------------------------------------------------------

  // "2026-11-28 09:00Z" (the ledger's instants are UTC).
  // Each job's IANA zone (GET /v1/jobs): its times are shown there, UTC beside.
  const ZONES = new Map();
  function learnZones(jobs) {
    for (const j of jobs)
      if (j.timezone) ZONES.set(j.name, j.timezone);
  }
  async function knowZones() {
    if (ZONES.size === 0) learnZones((await get('/v1/jobs')).jobs);
  }
  const zoneFormats = new Map();
  function zoneFormat(zone) {
    if (!zoneFormats.has(zone)) {
      let f = null;
      try {
        f = new Intl.DateTimeFormat('en-US', {
          timeZone: zone,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
          hourCycle: 'h23',
          timeZoneName: 'short'
        });
      } catch (e) {
        f = null;
      }  // a zone this browser does not know: UTC alone
      zoneFormats.set(zone, f);
    }
    return zoneFormats.get(zone);
  }
  // "2026-11-28 09:00 GMT+9 · 00:00Z" in `zone` (a job's), "2026-11-28 00:00Z"
  // without one; `seconds` for times seconds apart (attempts).
  function fmtTime(iso, zone, seconds) {
    if (!iso) return '—';
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?/.exec(iso);
    if (!m) return iso;
    const sec = seconds ? (m[3] || ':00') : '';
    const utc = `${m[2]}${sec}Z`;
    const f = zone && zone !== 'UTC' && zone !== 'Etc/UTC' ? zoneFormat(zone) : null;
    if (!f) return `${m[1]} ${utc}`;
    const p = Object.fromEntries(f.formatToParts(new Date(iso)).map((x) => [x.type, x.value]));
    const date = `${p.year}-${p.month}-${p.day}`;
    const local = `${date} ${p.hour}:${p.minute}${seconds ? `:${p.second}` : ''} ${p.timeZoneName}`;
    return `${local} · ${date === m[1] ? '' : `${m[1].slice(5)} `}${utc}`;
  }
  function fmtDuration(seconds) {
    if (seconds === null || seconds === undefined) return '—';
    const s = Math.round(Math.abs(seconds));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ''}`;
    if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor(s % 3600 / 60) ? ` ${Math.floor(s % 3600 / 60)}m` : ''}`;
    return `${Math.floor(s / 86400)}d ${Math.floor(s % 86400 / 3600)}h`;
  }
  function relative(iso) {
    if (!iso) return '';
    const d = (Date.parse(iso) - Date.now()) / 1000;
    return d >= 0 ? `in ${fmtDuration(d)}` : `${fmtDuration(-d)} ago`;
  }
  function badge(state, text) {
    return el('span', {class: `badge s-${state || 'none'}`}, text || (state || '—').replace('_', ' '));
  }
  const CELL_MARK = {succeeded: '✓', failed: '✗', unknown: '?', running: '▶', pending: '…',
    awaiting_approval: '◷', skipped: '–', cancelled: '–', missing: '!'};

  // ---- the API -------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.body = body || {};
    }
  }

  async function api(method, path, body) {
    const headers = {};
    const init = {method, headers, credentials: 'same-origin', cache: 'no-store'};
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      if (session) headers['X-CSRF-Token'] = session.csrf_token;
      if (body !== undefined) init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.status === 401 && path !== '/v1/session') {
      session = null;
      toLogin();
      throw new ApiError(res.status, data);
    }
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
  }
  const get = (path) => api('GET', path);
  const canOperate = () => session && session.role === 'operate';

  // ---- routing -------------------------------------------------------------

  function go(hash) {
    if (location.hash === hash) render();
    else location.hash = hash;
  }

  // "#/job/report?x=1" -> {parts: ['job', 'report'], query: URLSearchParams}
  function route() {
    const h = location.hash.replace(/^#\/?/, '');
    const [path, q] = h.split('?');
    return {parts: path.split('/').filter(Boolean).map(decodeURIComponent),
      query: new URLSearchParams(q || '')};
  }

  const PAGES = {
    '': overviewPage,
    job: jobPage,
    run: runPage,
    gaps: gapsPage,
    events: eventsPage,
  };

  // Renders the page of the current hash. `live`: a refresh of the same
  // page (keeps the scroll position, shows no "Loading").
  async function render(live) {
    const seq = ++renderSeq;
    const r = route();
    if (r.parts[0] === 'login') return loginPage(r);
    if (!session) {
      try {
        session = await api('GET', '/v1/session');
      } catch (e) {
        return toLogin();
      }
      showWho();
    }
    const page = PAGES[r.parts[0] || ''];
    document.querySelectorAll('#nav a').forEach((a) =>
      a.classList.toggle('active', a.dataset.nav === (r.parts[0] || 'overview')));
    if (!page) {
      replaceMain(el('p', {}, 'No such page. ', el('a', {href: '#/'}, 'Overview')));
      return;
    }
    try {
      const content = await page(r);
      if (seq !== renderSeq) return;  // a newer render started meanwhile
      const y = window.scrollY;
      replaceMain(content);
      if (live) window.scrollTo(0, y);
      markLive(true);
      if (!live) showBanner('');
    } catch (e) {
      if (seq !== renderSeq) return;
      if (e instanceof ApiError && e.status === 401) return;
      markLive(false);
      if (!live) replaceMain(el('p', {class: 'error'}, `Could not load this page: ${e.message}`));
    }
  }

  function replaceMain(node) {
    const main = $('main');
    main.replaceChildren(node);
    // Which page is showing (for tests and scripts that follow links).
    main.dataset.route = location.hash || '#/';
  }

  function markLive(ok) {
    const live = $('live');
    live.hidden = false;
    live.classList.toggle('stale', !ok);
    const now = new Date();
    live.textContent = ok ? `live · updated ${now.toISOString().slice(11, 19)}Z`
      : 'live · server unreachable, retrying';
  }

  function showWho() {
    $('nav').hidden = !session;
    $('logout').hidden = !session;
    $('who').textContent = session ? `${session.token_name} (${session.role})` : '';
  }

  function startPolling() {
    if (pollTimer) return;
    pollTimer = setInterval(() => {
      if (!session || document.hidden) return;
      if (!$('dialog-backdrop').hidden) return;  // never under an open form
      render(true);
    }, POLL_MS);
  }

  // ---- login ---------------------------------------------------------------

  // To the login page, coming back here after it: a link from an alert
  // notice lands on its run once the operator has logged in.
  function toLogin() {
    const here = location.hash || '#/';
    if (here.startsWith('#/login')) return go(here);
    go(here === '#/' ? '#/login' : `#/login?next=${encodeURIComponent(here)}`);
  }

  function loginPage(r) {
    session = null;
    showWho();
    $('live').hidden = true;
    const input = el('input', {type: 'password', id: 'token', name: 'token', autocomplete: 'current-password',
      required: true, placeholder: 'the token, e.g. from cronledger.token'});
    const problem = el('p', {class: 'error', id: 'login-error'});
    if (r.query.get('link') === 'invalid') {
      problem.textContent = 'That login link was used already or has expired (links work once, for 10 minutes). ' +
        'Log in with a token instead, or restart serve for a new link.';
    }
    const form = el('form', {id: 'login-form', onsubmit: async (ev) => {
      ev.preventDefault();
      problem.textContent = '';
      try {
        session = await api('POST', '/v1/session', {token: input.value});
        showWho();
        const next = r.query.get('next') || '';
        go(next.startsWith('#/') && !next.startsWith('#/login') ? next : '#/');
      } catch (e) {
        problem.textContent = e.status === 403 ? e.message
          : e.status === 401 ? 'That token is not valid on this server.' : `Could not log in: ${e.message}`;
      }
    }},
    el('div', {class: 'field'}, el('label', {for: 'token'}, 'API token'), input),
    el('p', {class: 'note'},
      'A token of role read or operate: an [[auth.token]] secret, or the one serve keeps in cronledger.token ' +
      'beside its config. serve also prints a one-time login link when it starts.'),
    problem,
    el('div', {class: 'actions'}, el('button', {class: 'btn primary', type: 'submit'}, 'Log in')));
    replaceMain(el('div', {class: 'login'}, el('div', {class: 'panel'}, el('h1', {}, 'Log in to cronledger'), form)));
    input.focus();
  }

  async function logout() {
    try { await api('DELETE', '/v1/session'); } catch (e) { /* gone already */ }
    session = null;
    go('#/login');
  }

  // ---- overview --------------------------------------------------------------

  function countCell(job, key, cls) {
    const n = job[key] || 0;
    return el('td', {class: `num ${n === 0 ? 'zero' : cls}`, 'data-count': key}, String(n));
  }

  async function overviewPage() {
    const data = await get('/v1/jobs');
    learnZones(data.jobs);
    const head = el('tr', {},
      el('th', {}, 'Job'), el('th', {}, 'State'), el('th', {}, 'Last success'),
      el('th', {}, 'Business date'),
      ['Expected', 'Succeeded', 'Failed', 'Unknown', 'Missing', 'Waived', 'In progress'].map((h) =>
        el('th', {class: 'num'}, h)),
      el('th', {}, 'Steps (done / expected)'), el('th', {class: 'num'}, 'Lag'), el('th', {}, 'Next run'));
    const rows = data.jobs.map((j) => {
      const wrong = j.failed > 0 || j.unknown > 0 || j.missing > 0 || j.state === 'paused' ||
        (j.unknown_runs || 0) > 0 || (j.expired_leases || 0) > 0;
      const lagging = !wrong && j.lag_seconds > 3600;
      const steps = el('div', {class: 'steps'}, Object.entries(j.steps || {}).map(([name, counts]) => {
        const done = counts.succeeded || 0;
        return el('span', {class: done < j.expected ? 'short' : '', 'data-step': name,
          title: Object.entries(counts).map(([s, n]) => `${s}: ${n}`).join(', ') || 'nothing yet'},
        `${name} ${done}/${j.expected}`);
      }));
      const lag = el('td', {class: `num ${j.lag_seconds > 3600 ? 'count-bad' : j.lag_seconds > 0 ? 'count-warn' : 'zero'}`,
        'data-count': 'lag_seconds', title: `${j.lag_seconds} s`}, j.lag_seconds ? fmtDuration(j.lag_seconds) : '0');
      const succeededAll = j.expected > 0 && j.succeeded + j.waived === j.expected;
      return el(
          'tr',
          {class: `clickable ${
               wrong       ? 'wrong' :
                   lagging ? 'lagging' :
                             ''}`,
           'data-job': j.name},
          el('td', {}, el('a', {href: `#/job/${encodeURIComponent(j.name)}`}, j.name)),
          el('td', {}, badge(j.state)),
          el('td', {},
             j.last_success_at ?
                 [
                   el('div', {}, fmtTime(j.last_success_at, j.timezone)),
                   el('div', {class: 'muted small'}, `for ${j.last_success_business_date}`)
                 ] :
                 el('span', {class: 'muted'}, 'never')),
          el('td', {}, j.business_date || '—',
             succeededAll ? el('span', {class: 'count-ok', title: 'complete'}, ' ✓') : null),
          countCell(j, 'expected', ''), countCell(j, 'succeeded', 'count-ok'),
          countCell(j, 'failed', 'count-bad'), countCell(j, 'unknown', 'count-bad'),
          countCell(j, 'missing', 'count-bad'), countCell(j, 'waived', ''),
          countCell(j, 'in_progress', 'count-info'), el('td', {}, steps), lag,
          el('td', {title: j.next_at || ''},
             j.next_at ?
                 [
                   el('div', {}, fmtTime(j.next_at, j.timezone)),
                   el('div', {class: 'muted small'}, relative(j.next_at))
                 ] :
                 '—'));
    });
    const wrongCount = data.jobs.filter((j) => j.failed || j.unknown || j.missing).length;
    return el('div', {},
      el('div', {class: 'toolbar'}, el('h1', {}, 'Overview'),
        el('span', {class: wrongCount ? 'count-bad' : 'count-ok', id: 'summary'},
          data.jobs.length === 0 ? 'no jobs configured'
            : wrongCount ? `${wrongCount} of ${data.jobs.length} job(s) need attention`
              : `all ${data.jobs.length} job(s) fine for their current business date`)),
      el('table', {class: 'overview', id: 'overview'}, el('thead', {}, head), el('tbody', {}, rows)),
      el('p', {class: 'note'}, 'Counts are for each job\'s current business date (the date of its latest occurrence). ' +
        'Missing = misfired or awaiting approval; waived = skipped on purpose or cancelled; lag = age of the oldest due key not done.'),
      nodesTable(data.nodes || []));
  }

  // The `serve` nodes sharing the ledger (its node heartbeat table).
  function nodesTable(nodes) {
    if (nodes.length === 0) return null;
    const down = nodes.filter((n) => !n.alive).length;
    return el('section', {id: 'nodes'},
      el('h2', {}, 'Nodes ', el('span', {class: down ? 'count-warn small' : 'count-ok small'},
        down ? `${nodes.length - down} of ${nodes.length} alive` : `all ${nodes.length} alive`)),
      el('table', {class: 'nodes'},
        el('thead', {}, el('tr', {}, el('th', {}, 'Node'), el('th', {}, 'State'), el('th', {}, 'Last seen'),
          el('th', {class: 'num'}, 'Running'), el('th', {}, 'Roles'), el('th', {}, 'Version'), el('th', {}, 'Address'),
          el('th', {}, 'Started'))),
        el('tbody', {}, nodes.map((n) => el('tr', {'data-node': n.node, class: n.alive ? '' : 'lagging'},
          el('td', {}, n.node),
          el('td', {}, badge(n.alive ? 'succeeded' : 'failed', n.alive ? 'alive' : 'not seen')),
          el('td', {title: n.last_seen_at}, relative(n.last_seen_at)),
          el('td', {class: 'num'}, String(n.running)),
          el('td', {title: 'alerter: sends the alerts of every node; scanner: records the gaps'},
            (n.roles || []).join(', ') || '—'),
          el('td', {}, n.version), el('td', {}, n.listen || '—'),
          el('td', {title: n.started_at}, fmtTime(n.started_at)))))));
  }

  // ---- job page: grid, charts, runs, actions -----------------------------------

  async function jobPage(r) {
    const name = r.parts[1];
    const q = encodeURIComponent(name);
    const [job, history, runs] = await Promise.all([
      get(`/v1/jobs/${q}`), get(`/v1/jobs/${q}/history?days=${CHART_DAYS}`),
      get(`/v1/runs?job=${q}&limit=15`)]);
    learnZones([job]);
    const paused = job.state === 'paused';
    const ro = !canOperate();
    const tools = el('div', {class: 'toolbar'},
      el('h1', {}, name), badge(job.state),
      el('span', {class: 'spacer'}),
      el('button', {class: 'btn', id: paused ? 'resume' : 'pause', disabled: ro,
        title: ro ? 'read-only session' : '',
        onclick: () => pauseDialog(name, !paused)}, paused ? 'Resume…' : 'Pause…'),
      el('button', {class: 'btn', id: 'rerun', disabled: ro, onclick: () => rerunDialog(name, job.business_date)}, 'Rerun a date…'),
      el('button', {class: 'btn', id: 'backfill', disabled: ro, onclick: () => backfillDialog(name, job.business_date)}, 'Backfill…'));
    const summary =
        el('p', {class: 'muted'},
           `Current business date ${job.business_date || '—'}: ${job.succeeded} of ${
               job.expected} succeeded` +
               `${job.failed ? `, ${job.failed} failed` : ''}${
                   job.unknown ? `, ${job.unknown} unknown` : ''}` +
               `${job.missing ? `, ${job.missing} missing` : ''}${
                   job.in_progress ? `, ${job.in_progress} in progress` : ''}. ` +
               `Next run ${fmtTime(job.next_at, job.timezone)} (${relative(job.next_at)}).`);
    return el('div', {}, tools, summary,
      el('h2', {}, `Partitions × business dates, last ${GRID_DAYS} days`),
      el('div', {class: 'panel'}, grid(history)),
      el('div', {class: 'row', style: null},
        el('div', {class: 'panel'}, el('h2', {}, `When each business date finished, last ${CHART_DAYS} days`),
          finishChart(history)),
        el('div', {class: 'panel'}, el('h2', {}, `Run durations, last ${CHART_DAYS} days`),
          durationChart(history))),
      el('h2', {}, 'Latest runs'), runsTable(runs.runs));
  }

  function grid(history) {
    const dates = history.dates.map((d) => d.business_date).slice(-GRID_DAYS);
    if (dates.length === 0) return el('div', {class: 'empty'}, 'No run was due in this window.');
    // One cell per partition and date; a job keyed by slot has several
    // keys a date: the cell shows the worst of them and says how many.
    const rank = (k) => ({failed: 0, unknown: 0, awaiting_approval: 1, skipped: k.waived ? 4 : 1, running: 2,
      pending: 2, cancelled: 4, succeeded: 5})[k.state] ?? 1;
    const byKey = new Map();
    for (const k of history.keys) {
      const id = `${k.partition}\u0000${k.business_date}`;
      const seen = byKey.get(id);
      const n = seen ? seen.n + 1 : 1;
      byKey.set(id, {...(!seen || rank(k) < rank(seen) ? k : seen), n});
    }
    const head = el('tr', {}, el('th', {}), dates.map((d) => el('th', {class: 'date', title: d}, d.slice(5))));
    const rows = history.partitions.map((p) => el('tr', {},
      el('th', {class: 'part'}, p),
      dates.map((d) => {
        const k = byKey.get(`${p}\u0000${d}`);
        if (!k) return el('td', {}, el('span', {class: 'cell s-none', title: `${p} ${d}: not expected`}, ''));
        const state = k.state || 'missing';
        const label = k.state ? `${state}${k.reason ? ` (${k.reason})` : ''}` : 'never planned';
        const title = `${p} · ${d}: ${k.n > 1 ? `${k.n} runs, the worst ` : ''}${label}` +
            `${
                          k.finished_at ?
                              `, finished ${fmtTime(k.finished_at, ZONES.get(history.job))}` :
                              ''}`;
        const cls = `cell s-${state === 'skipped' && !k.waived ? 'missing' : state}`;
        if (k.run_id === null) return el('td', {}, el('a', {class: cls, href: '#/gaps', title, 'data-cell': `${p}/${d}`}, CELL_MARK.missing));
        return el('td', {}, el('a', {class: cls, href: `#/run/${k.run_id}`, title, 'data-cell': `${p}/${d}`,
          'data-state': state}, CELL_MARK[state] || '•'));
      })));
    const legend = el('div', {class: 'legend'},
      [['succeeded', 'succeeded'], ['failed', 'failed'], ['unknown', 'unknown'], ['pending', 'in progress'],
        ['missing', 'missing / misfired'], ['awaiting_approval', 'awaiting approval'], ['skipped', 'waived']].map(([s, t]) =>
        el('span', {}, el('span', {class: `cell s-${s}`}, CELL_MARK[s]), t)));
    return el('div', {}, el('div', {class: 'grid-wrap'}, el('table', {class: 'grid', id: 'grid'}, el('thead', {}, head),
      el('tbody', {}, rows))), legend);
  }

  // Minutes after the scheduled time at which each business date's work
  // was done (its last succeeded run's end), one point per date.
  function finishChart(history) {
    const points = history.dates.filter((d) => d.finished_at).map((d) => ({
      date: d.business_date, complete: d.complete,
      minutes: (Date.parse(d.finished_at) - Date.parse(d.scheduled_at)) / 60000,
      finished: d.finished_at, scheduled: d.scheduled_at}));
    if (points.length === 0) return el('div', {class: 'empty'}, 'No business date has finished in this window.');
    const W = 620, H = 240, L = 56, R = 24, T = 14, B = 40;
    const allDates = history.dates.map((d) => d.business_date);
    const maxMin = Math.max(10, ...points.map((p) => p.minutes));
    const minMin = Math.min(0, ...points.map((p) => p.minutes));
    const yTicks = niceTicks(minMin, maxMin, 5);
    const y0 = yTicks[0], y1 = yTicks[yTicks.length - 1];
    const x = (date) => L + (allDates.length === 1 ? (W - L - R) / 2
      : allDates.indexOf(date) * (W - L - R) / (allDates.length - 1));
    const y = (m) => T + (H - T - B) * (1 - (m - y0) / (y1 - y0));
    const nodes = [];
    for (const t of yTicks) {
      nodes.push(svg('line', {class: 'gridline', x1: L, x2: W - R, y1: y(t), y2: y(t)}));
      nodes.push(svg('text', {x: L - 6, y: y(t) + 4, 'text-anchor': 'end'}, fmtMinutes(t)));
    }
    nodes.push(svg('line', {class: 'schedule', x1: L, x2: W - R, y1: y(0), y2: y(0)}));
    nodes.push(svg('text', {x: W - R, y: y(0) - 5, 'text-anchor': 'end'}, 'scheduled time'));
    const step = Math.max(1, Math.ceil(allDates.length / 8));
    allDates.forEach((d, i) => {
      if (i % step && i !== allDates.length - 1) return;
      const anchor = allDates.length > 1 && i === allDates.length - 1 ? 'end' : i === 0 && allDates.length > 1 ? 'start' : 'middle';
      nodes.push(svg('text', {x: x(d), y: H - B + 16, 'text-anchor': anchor}, d.slice(5)));
    });
    nodes.push(svg('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}));
    nodes.push(svg('text', {x: L, y: H - 6}, 'business date'));
    nodes.push(svg('polyline', {class: 'trend', points: points.map((p) => `${x(p.date)},${y(p.minutes)}`).join(' ')}));
    for (const p of points) {
      nodes.push(svg(
          'circle', {
            class: `point${p.complete ? '' : ' incomplete'}`,
            cx: x(p.date),
            cy: y(p.minutes),
            r: 5,
            'data-date': p.date
          },
          svg('title', {},
              `${p.date}: finished ${fmtTime(p.finished, ZONES.get(history.job))}, ${
                  fmtMinutes(p.minutes)} after ${fmtTime(p.scheduled, ZONES.get(history.job))}` +
                  `${p.complete ? '' : ' (not every key succeeded)'}`)));
    }
    return el('div', {},
      svg('svg', {class: 'chart', id: 'finish-chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
        'aria-label': 'finish time after the scheduled time per business date'}, nodes),
      el('p', {class: 'note'}, 'Each point: when the date\'s last successful run ended, after its scheduled time. ' +
        'Orange: the date is not complete. A line climbing day by day is a job drifting later.'));
  }

  function durationChart(history) {
    const durations = history.keys.filter((k) => k.duration_seconds !== null).map((k) => k.duration_seconds);
    if (durations.length === 0) return el('div', {class: 'empty'}, 'No run has ended in this window.');
    const W = 620, H = 240, L = 44, R = 14, T = 14, B = 40;
    const max = Math.max(...durations);
    const target = Math.min(12, Math.max(4, Math.ceil(Math.sqrt(durations.length))));
    // A bin width people read at a glance: 1s, 2s, 5s, ... 1m, 2m, 5m, ... 1h, ...
    const widths = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
    const width = widths.find((w) => (max + 1) / w <= target) || Math.ceil((max + 1) / target);
    const bins = Math.max(1, Math.ceil((max + 1) / width));
    const counts = new Array(bins).fill(0);
    for (const d of durations) counts[Math.min(bins - 1, Math.floor(d / width))]++;
    const top = niceTicks(0, Math.max(...counts), 4);
    const yMax = top[top.length - 1];
    const bw = (W - L - R) / bins;
    const y = (n) => T + (H - T - B) * (1 - n / yMax);
    const nodes = [];
    for (const t of top) {
      nodes.push(svg('line', {class: 'gridline', x1: L, x2: W - R, y1: y(t), y2: y(t)}));
      nodes.push(svg('text', {x: L - 6, y: y(t) + 4, 'text-anchor': 'end'}, String(t)));
    }
    counts.forEach((n, i) => {
      nodes.push(svg('rect', {class: 'bar', x: L + i * bw + 2, y: y(n), width: Math.max(1, bw - 4), height: y(0) - y(n)},
        svg('title', {}, `${fmtDuration(i * width)}–${fmtDuration((i + 1) * width)}: ${n} run(s)`)));
    });
    // Labels on the bins' edges: a bar spans from its left label to the next.
    for (let i = 0; i <= bins; i += bins <= 8 ? 1 : 2) {
      nodes.push(svg('text', {x: L + i * bw, y: H - B + 16, 'text-anchor': i === 0 ? 'start' : i === bins ? 'end' : 'middle'},
        fmtDuration(i * width)));
    }
    nodes.push(svg('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}));
    nodes.push(svg('text', {x: L, y: H - 6}, 'duration of the run\'s last attempt'));
    const sorted = [...durations].sort((a, b) => a - b);
    const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
    return el('div', {},
      svg('svg', {class: 'chart', id: 'duration-chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
        'aria-label': 'distribution of run durations'}, nodes),
      el('p', {class: 'note'}, `${durations.length} run(s): median ${fmtDuration(pct(0.5))}, ` +
        `p90 ${fmtDuration(pct(0.9))}, longest ${fmtDuration(max)}.`));
  }

  function niceTicks(lo, hi, n) {
    if (hi <= lo) hi = lo + 1;
    const raw = (hi - lo) / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const ticks = [];
    for (let t = Math.floor(lo / step) * step; t <= hi + step * 0.999; t += step) ticks.push(Math.round(t * 1e6) / 1e6);
    if (ticks.length < 2) ticks.push(ticks[0] + step);
    return ticks;
  }
  function fmtMinutes(m) {
    const sign = m < 0 ? '−' : '+';
    const a = Math.abs(m);
    if (a < 60) return `${sign}${Math.round(a)}m`;
    const h = Math.floor(a / 60), mm = Math.round(a % 60);
    return `${sign}${h}h${mm ? String(mm).padStart(2, '0') : ''}`;
  }

  function runsTable(runs) {
    if (runs.length === 0) return el('div', {class: 'panel empty'}, 'No runs.');
    return el(
        'table', {id: 'runs'},
        el('thead', {},
           el('tr', {},
              ['Run', 'Partition', 'Business date', 'Scheduled', 'State', 'Attempts', 'Steps'].map(
                  (h) => el('th', {}, h)))),
        el('tbody', {},
           runs.map(
               (r) =>
                   el('tr', {class: 'clickable', 'data-run': r.id},
                      el('td', {}, el('a', {href: `#/run/${r.id}`}, `#${r.id}`)),
                      el('td', {}, r.partition), el('td', {}, r.business_date),
                      el('td', {class: 'nowrap'}, fmtTime(r.scheduled_at, ZONES.get(r.job))),
                      el('td', {}, badge(r.state),
                         r.reason ? el('span', {class: 'muted small'}, ` ${r.reason}`) : null),
                      el('td', {class: 'num'}, String(r.attempts)),
                      el('td', {class: 'steps'},
                         r.steps.map(
                             (s) => el('span', {}, badge(s.state, `${s.name}: ${s.state}`))))))));
  }

  // ---- run detail --------------------------------------------------------------

  async function runPage(r) {
    const id = r.parts[1];
    const [run] = await Promise.all([get(`/v1/runs/${encodeURIComponent(id)}`), knowZones()]);
    const zone = ZONES.get(run.job);
    const ro = !canOperate();
    const retryable = run.state === 'failed' || run.state === 'unknown';
    const cancellable = ['pending', 'awaiting_approval', 'failed', 'unknown'].includes(run.state);
    const tools = el(
        'div', {class: 'toolbar'}, el('h1', {}, `Run #${run.id}`), badge(run.state),
        run.reason ? el('span', {class: 'muted'}, run.reason) : null, el('span', {class: 'spacer'}),
        el('button', {
          class: 'btn',
          id: 'run-resolve',
          disabled: ro || run.state !== 'unknown',
          title: 'Settle an unknown run, or an effect in doubt, by your word',
          onclick: () => resolveDialog(run)
        },
           'Resolve…'),
        el('button', {
          class: 'btn',
          id: 'run-retry',
          disabled: ro || !retryable,
          onclick: () => runActionDialog(run, 'retry')
        },
           'Retry…'),
        el('button', {
          class: 'btn',
          id: 'run-rerun',
          disabled: ro,
          onclick: () => rerunDialog(run.job, run.business_date, run.partition)
        },
           'Rerun…'),
        el('button', {
          class: 'btn',
          id: 'run-cancel',
          disabled: ro || !cancellable,
          onclick: () => runActionDialog(run, 'cancel')
        },
           'Cancel…'));
    const facts =
        el('dl', {class: 'facts'}, el('dt', {}, 'Run key'), el('dd', {class: 'mono'}, run.run_key),
           el('dt', {}, 'Job'),
           el('dd', {}, el('a', {href: `#/job/${encodeURIComponent(run.job)}`}, run.job)),
           el('dt', {}, 'Partition'), el('dd', {}, run.partition), el('dt', {}, 'Business date'),
           el('dd', {}, run.business_date), el('dt', {}, 'Scheduled'),
           el('dd', {}, fmtTime(run.scheduled_at, zone)), el('dt', {}, 'Attempts'),
           el('dd', {}, String(run.attempts)), el('dt', {}, 'Steps'),
           el('dd', {class: 'steps'},
              run.steps.map((s) => el('span', {}, badge(s.state, `${s.name}: ${s.state}`)))));
    const attempts = run.attempt_list || [];
    const last = attempts[attempts.length - 1];
    return el(
        'div', {}, tools,
        el('div', {class: 'row'}, el('div', {class: 'panel'}, facts),
           el('div', {class: 'panel'},
              el('h2', {style: null}, 'Log tail', last ? ` (attempt ${last.number})` : ''),
              last && last.output_tail ? el('pre', {class: 'log', id: 'log'}, last.output_tail) :
                                         el('div', {class: 'empty'}, 'No output recorded.'))),
        el('h2', {}, 'Attempts'),
        attempts.length === 0 ?
            el('div', {class: 'panel empty'}, 'No attempt yet.') :
            el('table', {id: 'attempts'},
               el('thead', {},
                  el('tr', {},
                     [
                       '#', 'Node', 'Started', 'Ended', 'Duration', 'End class', 'Exit status',
                       'Step', 'Fencing token'
                     ].map((h) => el('th', {}, h)))),
               el('tbody', {},
                  attempts.map(
                      (a) => el(
                          'tr', {}, el('td', {}, String(a.number)), el('td', {}, a.node),
                          el('td', {class: 'nowrap'}, fmtTime(a.started_at, zone, true)),
                          el('td', {class: 'nowrap'}, fmtTime(a.ended_at, zone, true)),
                          el('td', {class: 'num'},
                             a.ended_at ?
                                 fmtDuration(
                                     (Date.parse(a.ended_at) - Date.parse(a.started_at)) / 1000) :
                                 'running'),
                          el('td', {},
                             a.end_class ? badge(
                                               a.end_class === 'succeeded' ? 'succeeded' : 'failed',
                                               a.end_class) :
                                           '—'),
                          el('td', {class: 'num'},
                             a.exit_status === null || a.exit_status === undefined ?
                                 '—' :
                                 String(a.exit_status)),
                          el('td', {}, a.step || '—'),
                          el('td', {class: 'num'}, String(a.fencing_token)))))),
        el('h2', {}, 'Effects'),
        (run.effects || []).length === 0 ?
            el('div', {class: 'panel empty'}, 'No effect recorded.') :
            el('table', {id: 'effects'},
               el('thead', {},
                  el('tr', {},
                     ['Key', 'State', 'In doubt', 'Result', 'Started', 'Updated']
                         .map((h) => el('th', {}, h)))),
               el('tbody', {},
                  run.effects.map(
                      (f) =>
                          el('tr', {}, el('td', {class: 'mono'}, f.key),
                             el('td', {},
                                badge(
                                    f.state === 'committed'  ? 'succeeded' :
                                        f.state === 'failed' ? 'failed' :
                                                               'pending',
                                    f.state)),
                             el('td', {}, f.in_doubt ? badge('unknown', 'in doubt') : 'no'),
                             el('td', {class: 'mono small'}, (f.result || '').slice(0, 200)),
                             el('td', {}, fmtTime(f.started_at, zone, true)),
                             el('td', {}, fmtTime(f.updated_at, zone, true)))))),
        el('h2', {}, 'Events'), eventsTable(run.events || [], false));
  }

  function eventsTable(events, withRun) {
    if (events.length === 0) return el('div', {class: 'panel empty'}, 'No events.');
    return el(
        'table', {id: 'events'},
        el('thead', {},
           el('tr', {},
              ['At', 'Type', withRun ? 'Run' : null, 'Actor', 'Reason', 'Details']
                  .filter(Boolean)
                  .map((h) => el('th', {}, h)))),
        el('tbody', {},
           events.map(
               (e) => el(
                   'tr', {'data-event': e.type},
                   el('td', {class: 'nowrap'}, fmtTime(e.at, ZONES.get(e.job), true)),
                   el('td', {class: 'nowrap'}, el('code', {}, e.type)),
                   withRun ? el('td', {class: 'nowrap'},
                                e.run_id ? el('a', {href: `#/run/${e.run_id}`, class: 'mono small'},
                                              e.run_key || `#${e.run_id}`) :
                                           (e.job || '—')) :
                             null,
                   el('td', {class: 'nowrap'}, e.actor || '—',
                      e.on_behalf_of ?
                          el('div', {class: 'small muted'}, `on behalf of ${e.on_behalf_of}`) :
                          null),
                   el('td', {}, e.reason || ''),
                   el('td', {class: 'mono details'}, detailsCell(e.details))))));
  }
  // A long detail shows its start and opens to the whole of it.
  function detailsCell(d) {
    if (!d || typeof d !== 'object' || Object.keys(d).length === 0) return '';
    const t = JSON.stringify(d);
    if (t.length <= 160) return t;
    return el('details', {class: 'long'}, el('summary', {}, `${t.slice(0, 160)}…`),
      el('pre', {}, JSON.stringify(d, null, 2)));
  }

  // ---- gaps and events -----------------------------------------------------------

  async function gapsPage(r) {
    const waived = r.query.get('waived') === '1';
    const [data] =
        await Promise.all([get(`/v1/gaps${waived ? '?include_waived=true' : ''}`), knowZones()]);
    const toggle = el('a', {class: 'btn', href: waived ? '#/gaps' : '#/gaps?waived=1', id: 'toggle-waived'},
      waived ? 'Hide waived keys' : 'Also show waived keys');
    const body = data.gaps.length === 0 ?
        el('div', {class: 'panel empty'},
           'No gaps: every due run key is succeeded, waived or in flight.') :
        el('table', {id: 'gaps'},
           el('thead', {},
              el('tr', {},
                 ['Run key', 'Job', 'Partition', 'Business date', 'Scheduled', 'Cause',
                  ''].map((h) => el('th', {}, h)))),
           el('tbody', {},
              data.gaps.map(
                  (g) => el(
                      'tr', {'data-gap': g.run_key},
                      el('td', {class: 'mono'},
                         g.run_id ? el('a', {href: `#/run/${g.run_id}`}, g.run_key) : g.run_key),
                      el('td', {}, el('a', {href: `#/job/${encodeURIComponent(g.job)}`}, g.job)),
                      el('td', {}, g.partition), el('td', {}, g.business_date),
                      el('td', {class: 'nowrap'}, fmtTime(g.scheduled_at, ZONES.get(g.job))),
                      el('td', {},
                         badge(
                             g.waived ?
                                 'waived' :
                                 (g.cause === 'awaiting_approval' ? 'awaiting_approval' : 'failed'),
                             g.cause.replace('_', ' '))),
                      el('td', {}, canOperate() && !g.waived ? gapAction(g) : null)))));
    return el('div', {}, el('div', {class: 'toolbar'}, el('h1', {}, 'Gaps'),
      el('span', {class: data.gaps.filter((g) => !g.waived).length ? 'count-bad' : 'count-ok'},
        `${data.gaps.filter((g) => !g.waived).length} gap(s)`), el('span', {class: 'spacer'}), toggle),
    el('p', {class: 'note'}, 'Expected run keys that are due and neither succeeded, waived nor in flight, within each job\'s backfill horizon.'),
    body);
  }

  // What recovers a gap: rerun a failed / unknown / stuck run, approve one
  // awaiting approval, backfill a key never planned or misfired.
  function gapAction(g) {
    if (g.cause === 'awaiting_approval' && g.run_id) {
      return el('button', {class: 'btn small', onclick: () => approveDialog(g)}, 'Approve…');
    }
    const rerun = g.cause === 'failed' || g.cause === 'unknown' || g.cause === 'stuck';
    return el('button', {class: 'btn small', onclick: () => (rerun
      ? rerunDialog(g.job, g.business_date, g.partition)
      : backfillDialog(g.job, g.business_date, g.partition))}, rerun ? 'Rerun…' : 'Backfill…');
  }

  function approveDialog(g) {
    const reason = reasonInput();
    const problem = el('p', {class: 'error', id: 'dialog-error'});
    openDialog(`Approve ${g.run_key}`,
      el('p', {class: 'note'}, 'The key is older than the job\'s backfill.auto_within: approving queues its run now.'),
      field('Reason (required)', reason), problem,
      el('div', {class: 'actions'}, el('button', {class: 'btn', onclick: closeDialog}, 'Close'),
        el('button', {class: 'btn primary', id: 'confirm', onclick: async () => {
          if (!reason.value.trim()) { problem.textContent = 'Say why: the reason is recorded in the ledger.'; return; }
          try {
            await api('POST', '/v1/approve', {job: g.job, run: g.run_id, reason: reason.value});
            done(`${g.run_key} approved: queued.`);
          } catch (e) { problem.textContent = e.message; }
        }}, 'Approve')));
  }

  // The page's filters are its hash (#/events?job=J&run=N&type=T&actor=A),
  // so a filtered list can be linked to and survives a refresh.
  const EVENT_FILTERS = [['job', 'job', 'Job'], ['run', 'run_id', 'Run id'], ['type', 'type', 'Type'],
    ['actor', 'actor', 'Actor or on behalf of']];
  async function eventsPage(r) {
    const params = new URLSearchParams({limit: '100'});
    for (const [key, param] of EVENT_FILTERS) {
      const v = (r.query.get(key) || '').trim();
      if (v) params.set(param, v);
    }
    // A filter the API refuses (a type no event has the shape of, a run id
    // that is not a number) keeps the form, with the API's reason.
    let data = {events: []};
    let refused = null;
    try {
      [data] = await Promise.all([get(`/v1/events?${params}`), knowZones()]);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status >= 500 || e.status === 401) throw e;
      refused = e.message;
    }
    const inputs = EVENT_FILTERS.map(([key, , label]) => [key, el('input', {type: 'text', id: `events-${key}`,
      value: r.query.get(key) || '', placeholder: 'any', spellcheck: 'false', 'aria-label': label})]);
    const apply = (e) => {
      e.preventDefault();
      const q = new URLSearchParams();
      for (const [key, input] of inputs) if (input.value.trim()) q.set(key, input.value.trim());
      go(`#/events${q.toString() ? `?${q}` : ''}`);
    };
    const filters = el('form', {class: 'inline filters', id: 'events-filter', onsubmit: apply},
      inputs.map(([key, input], i) => field(EVENT_FILTERS[i][2], input)),
      el('button', {class: 'btn', type: 'submit', id: 'events-apply'}, 'Filter'),
      el('a', {class: 'btn', href: '#/events', id: 'events-clear'}, 'Clear'));
    const filtered = [...params.keys()].length > 1;
    return el('div', {}, el('div', {class: 'toolbar'}, el('h1', {}, 'Events'),
      el('span', {class: 'muted'}, `the newest 100${filtered ? ' that match' : ''}, newest first`)),
    filters, refused ? el('p', {class: 'error', id: 'events-error'}, refused)
      : eventsTable([...data.events].reverse(), true));
  }

  // ---- dialogs: the actions ------------------------------------------------------

  function openDialog(title, ...content) {
    const d = $('dialog');
    d.replaceChildren(el('h2', {}, title), ...content);
    $('dialog-backdrop').hidden = false;
    const first = d.querySelector('input, select, textarea');
    if (first) first.focus();
  }
  function closeDialog() {
    $('dialog-backdrop').hidden = true;
    $('dialog').replaceChildren();
  }
  function field(label, input) {
    return el('div', {class: 'field'}, el('label', {for: input.id}, label), input);
  }
  function reasonInput() {
    return el('textarea', {id: 'reason', name: 'reason', required: true, maxlength: 4096,
      placeholder: 'why — recorded in the ledger with your token\'s name'});
  }
  function partitionsOf(text) {
    return text.split(/[\s,]+/).filter(Boolean);
  }
  function done(message) {
    closeDialog();
    showBanner(message, true);
    render(true);
  }

  function pauseDialog(job, pause) {
    const reason = reasonInput();
    const problem = el('p', {class: 'error', id: 'dialog-error'});
    openDialog(`${pause ? 'Pause' : 'Resume'} ${job}`,
      el('p', {class: 'note'}, pause ? 'A paused job plans but does not start runs; with on_pause = "hold" they run on resume.'
        : 'Runs held while paused start now.'),
      field('Reason (required)', reason), problem,
      el('div', {class: 'actions'}, el('button', {class: 'btn', onclick: closeDialog}, 'Close'),
        el('button', {class: 'btn primary', id: 'confirm', onclick: async () => {
          if (!reason.value.trim()) { problem.textContent = 'Say why: the reason is recorded in the ledger.'; return; }
          try {
            await api('POST', pause ? '/v1/pause' : '/v1/resume', {job, reason: reason.value});
            done(`${job} ${pause ? 'paused' : 'resumed'}.`);
          } catch (e) { problem.textContent = e.message; }
        }}, pause ? 'Pause' : 'Resume')));
  }

  function inDoubtKeys(run) {
    return (run.effects || []).filter((f) => f.in_doubt).map((f) => f.key);
  }

  function runActionDialog(run, action) {
    const reason = reasonInput();
    const problem = el('p', {class: 'error', id: 'dialog-error'});
    const doubt = inDoubtKeys(run);
    // A retry re-runs the step, whose `effect run` finds the key in doubt
    // again: only a reconcile program can tell what happened.
    const warning = action === 'retry' && doubt.length > 0 ?
        el('p', {class: 'warning', id: 'retry-warning'},
           `An effect of this run is in doubt (${
               doubt.join(', ')}). A retry runs the step again, which finds the ` +
               'effect still in doubt: unless the step gives `cronledger effect run` a --reconcile program, the run ' +
               'ends in doubt again. If you know whether the effect happened, Resolve it instead.') :
        null;
    openDialog(
        `${action === 'retry' ? 'Retry' : 'Cancel'} ${run.run_key}`,
        el('p', {class: 'note'},
           action === 'retry' ?
               'Puts the run back to pending as a new attempt with a fresh retry budget.' :
               'The run becomes cancelled: waived, not a gap, and not run.'),
        warning, field('Reason (required)', reason), problem,
        el('div', {class: 'actions'}, el('button', {class: 'btn', onclick: closeDialog}, 'Close'),
           el('button', {
             class: `btn ${action === 'cancel' ? 'danger' : 'primary'}`,
             id: 'confirm',
             onclick: async () => {
               if (!reason.value.trim()) {
                 problem.textContent = 'Say why: the reason is recorded in the ledger.';
                 return;
               }
               try {
                 await api('POST', `/v1/runs/${run.id}/${action}`, {reason: reason.value});
                 done(`Run #${run.id}: ${action} done.`);
               } catch (e) {
                 problem.textContent = e.message;
               }
             }
           },
              action === 'retry' ? 'Retry' : 'Cancel run')));
  }

  // Resolve, as `cronledger resolve`: an effect in doubt is settled
  // committed or failed (the run is queued again once none is in doubt);
  // an unknown run without one is settled succeeded, failed or retry. What
  // the chosen answer does is shown before it is confirmed.
  function resolveDialog(run) {
    const reason = reasonInput();
    const problem = el('p', {class: 'error', id: 'dialog-error'});
    const doubt = inDoubtKeys(run);
    const choices = doubt.length > 0 ?
        {
          committed:
              'It happened (you checked at the other side): the effect is recorded committed, and the step, ' +
              'when it asks again, is told so and does not do it again.',
          failed:
              'It did not happen: the effect is recorded failed, and the step does it again on the next attempt.',
        } :
        {
          succeeded:
              'You vouch that the run\'s work was done: the run becomes succeeded (its steps\' states are left ' +
              'as they were). Nothing runs again.',
          failed:
              'The run becomes failed, a dead letter: nothing runs until someone retries or reruns it.',
          retry:
              'The run goes back to pending for a new attempt with a fresh retry budget: the step that may have ' +
              'finished runs again.',
        };
    const labels = {
      committed: 'committed: it happened',
      failed: doubt.length > 0 ? 'failed: it did not happen' : 'failed',
      succeeded: 'succeeded',
      retry: 'retry'
    };
    const as =
        el('select', {id: 'resolve-as'},
           Object.keys(choices).map((c) => el('option', {value: c}, labels[c])));
    const effect = doubt.length > 0 ?
        el('select', {id: 'resolve-effect'}, doubt.map((k) => el('option', {value: k}, k))) :
        null;
    const preview = el('p', {class: 'note', id: 'resolve-preview'});
    const explain = () => {
      const others = doubt.filter((k) => !effect || k !== effect.value);
      preview.textContent = choices[as.value] +
          (doubt.length === 0 ?
               '' :
               others.length > 0 ?
               ` The run stays unknown while ${others.join(', ')} ${
                   others.length > 1 ? 'are' : 'is'} still in doubt.` :
               ' No other effect is in doubt: the run is then queued for a new attempt.');
    };
    as.addEventListener('change', explain);
    if (effect) effect.addEventListener('change', explain);
    explain();
    openDialog(
        `Resolve ${run.run_key}`,
        el('p', {class: 'note'},
           doubt.length > 0 ?
               'The run is unknown because an effect is in doubt: its step began it, and nobody knows whether it took place.' :
               'The run is unknown: a step that is not safe to repeat ended without a clear outcome.'),
        effect ? field('Effect in doubt', effect) : null,
        field(doubt.length > 0 ? 'Settle the effect as' : 'Resolve the run as', as), preview,
        field('Reason (required)', reason), problem,
        el('div', {class: 'actions'}, el('button', {class: 'btn', onclick: closeDialog}, 'Close'),
           el('button', {
             class: 'btn primary',
             id: 'confirm',
             onclick: async () => {
               if (!reason.value.trim()) {
                 problem.textContent = 'Say why: the reason is recorded in the ledger.';
                 return;
               }
               const body = {as: as.value, reason: reason.value};
               if (effect) body.effect = effect.value;
               try {
                 const after = await api('POST', `/v1/runs/${run.id}/resolve`, body);
                 const still = after.still_in_doubt || [];
                 done(
                     effect ? `Effect ${effect.value} of run #${run.id} resolved as ${as.value}; ` +
                             (still.length > 0 ?
                                  `the run stays unknown: still in doubt: ${still.join(', ')}.` :
                                  `the run is ${after.state} now.`) :
                                  `Run #${run.id} resolved as ${as.value}: ${after.state} now.`);
               } catch (e) {
                 problem.textContent = e.message;
               }
             }
           },
              'Resolve')));
  }

  // The impact flows: the preview first (nothing changes), then a reason
  // and a confirmation of exactly that preview (yes + preview_digest).
  function impactDialog(kind, job, inputs, request) {
    const reason = reasonInput();
    const problem = el('p', {class: 'error', id: 'dialog-error'});
    const previewBox = el('div', {id: 'preview'});
    let preview = null;
    const confirm = el('button', {class: 'btn primary', id: 'confirm', disabled: true}, 'Confirm');
    const invalidate = () => {
      preview = null;
      confirm.disabled = true;
      previewBox.replaceChildren(el('p', {class: 'note'}, 'Ask for the impact first: nothing changes until you confirm it.'));
    };
    inputs.forEach((i) => i.addEventListener('input', invalidate));
    inputs.forEach((i) => i.addEventListener('change', invalidate));
    // Every key the action leaves alone says why, and what would queue it.
    const notQueued = (p) => {
      const left = p.not_queued || [];
      if (!left.length) return null;
      const total = Math.max(p.not_queued_total || 0, left.length);
      return el(
          'div', {id: 'not-queued'}, el('strong', {}, `Not queued: ${total} key(s)`),
          el('ul', {},
             left.slice(0, 50).map(
                 (k) =>
                     el('li', {}, el('span', {class: 'mono'}, k.run_key), ` — ${k.why}`,
                        k.command ? el('div', {class: 'mono muted'}, k.command) : null)),
             total > 50 ? el('li', {}, `… and ${total - 50} more`) : null));
    };
    const showPreview = (p, note) => {
      preview = p;
      const n = p.would_queue.length;
      const rows = ['expected', 'succeeded', 'failed', 'unknown', 'missing', 'waived', 'in_progress', 'effects_committed']
        .map((k) => [el('dt', {}, k.replace('_', ' ')), el('dd', {'data-preview': k}, String(p[k] ?? 0))]);
      previewBox.replaceChildren(el(
          'div', {class: 'preview'}, note ? el('p', {class: 'error'}, note) : null,
          el('strong', {id: 'would-queue-count'}, `Would queue ${n} run(s)`),
          p.succeeded_left_alone ?
              el('span', {class: 'muted'},
                 ` · ${p.succeeded_left_alone} succeeded left alone (force reruns them)`) :
              null,
          p.effects_committed ?
              el('p', {class: 'note'},
                 `${p.effects_committed} committed effect(s) in scope: they are replayed, not repeated.`) :
              null,
          el('dl', {class: 'counts'}, rows),
          p.awaiting_approval ?
              el('p', {class: 'note'},
                 `${p.awaiting_approval} of them await approval: confirming approves them, with your reason.`) :
              null,
          n ? el('ul', {}, p.would_queue.slice(0, 50).map((k) => el('li', {class: 'mono'}, k)),
                 n > 50 ? el('li', {}, `… and ${n - 50} more`) : null) :
              el('p', {}, 'Nothing to queue.'),
          notQueued(p)));
      confirm.disabled = n === 0;
      confirm.textContent = `Confirm: ${kind} ${n} run(s)`;
    };
    const previewButton = el('button', {class: 'btn', id: 'preview-button', onclick: async () => {
      problem.textContent = '';
      try {
        // The API wants a reason on every action body, a preview's too
        // (nothing is recorded for a preview): the one typed so far, if any.
        showPreview(await api('POST', `/v1/${kind}`, {...request(), reason: reason.value.trim() || 'preview'}));
      } catch (e) { invalidate(); problem.textContent = e.message; }
    }}, 'Show impact');
    confirm.addEventListener('click', async () => {
      problem.textContent = '';
      if (!preview) return;
      if (!reason.value.trim()) { problem.textContent = 'Say why: the reason is recorded in the ledger.'; return; }
      try {
        const out = await api('POST', `/v1/${kind}`, {...request(), reason: reason.value, yes: true,
          preview_digest: preview.preview_digest});
        done(`${kind === 'rerun' ? 'Rerun' : 'Backfill'} of ${job}: ${out.queued.length} run(s) queued (event #${out.event_id}).`);
      } catch (e) {
        if (e.body.error === 'stale_preview' && e.body.preview) {
          showPreview(e.body.preview, 'The ledger changed since that preview: this is the impact now. Confirm again if it is right.');
        } else {
          problem.textContent = e.message;
        }
      }
    });
    invalidate();
    return [previewBox, field('Reason (required)', reason), problem,
      el('div', {class: 'actions'}, el('button', {class: 'btn', onclick: closeDialog}, 'Close'), previewButton, confirm)];
  }

  // A business date as the CLI and the API write it, whatever the browser's
  // locale (a date picker would show 12/01/2026 in one and 01.12.2026 in
  // another).
  function dateInput(id, value) {
    return el('input', {type: 'text', id, value: value || '', placeholder: 'YYYY-MM-DD', maxlength: '10',
      pattern: '\\d{4}-\\d{2}-\\d{2}', inputmode: 'numeric', spellcheck: 'false', class: 'date-in'});
  }

  function rerunDialog(job, date, partition) {
    const dateIn = dateInput('rerun-date', date);
    const only = el('select', {id: 'rerun-only'}, ['all', 'failed', 'unknown', 'missing'].map((o) => el('option', {value: o}, o)));
    const parts = el('input', {type: 'text', id: 'rerun-partitions', value: partition || '', placeholder: 'all expected partitions'});
    const force = el('input', {type: 'checkbox', id: 'rerun-force'});
    const request = () => {
      const body = {job, date: dateIn.value, only: only.value, force: force.checked};
      const p = partitionsOf(parts.value);
      if (p.length) body.partitions = p;
      return body;
    };
    openDialog(`Rerun ${job}`,
      el('p', {class: 'note'}, 'Runs of one business date go back to pending: failed, unknown and missing ones; ' +
        'succeeded ones too with "force" (from their first step; committed effects are replayed, not redone).'),
      el('div', {class: 'inline'}, field('Business date', dateIn), field('Which runs', only)),
      field('Partitions (comma-separated; empty: all)', parts),
      el('label', {class: 'check'}, force, 'force: also rerun succeeded runs'),
      ...impactDialog('rerun', job, [dateIn, only, parts, force], request));
  }

  function backfillDialog(job, date, partition) {
    const from = dateInput('backfill-from', date);
    const to = dateInput('backfill-to', date);
    const parts = el('input', {type: 'text', id: 'backfill-partitions', value: partition || '', placeholder: 'all expected partitions'});
    const waived = el('input', {type: 'checkbox', id: 'backfill-waived'});
    const request = () => {
      const body = {job, from: from.value, to: to.value, include_waived: waived.checked};
      const p = partitionsOf(parts.value);
      if (p.length) body.partitions = p;
      return body;
    };
    openDialog(`Backfill ${job}`,
      el('p', {class: 'note'}, 'Queues the expected keys of a business-date range that never ran, misfired or ' +
        'await approval (confirming approves those, with your reason).'),
      el('div', {class: 'inline'}, field('From', from), field('To', to)),
      field('Partitions (comma-separated; empty: all)', parts),
      el('label', {class: 'check'}, waived, 'also keys waived on purpose (skipped, cancelled)'),
      ...impactDialog('backfill', job, [from, to, parts, waived], request));
  }

  // ---- start -------------------------------------------------------------------

  window.addEventListener('hashchange', () => { closeDialog(); render(false); });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeDialog(); });
  $('dialog-backdrop').addEventListener('click', (e) => { if (e.target === $('dialog-backdrop')) closeDialog(); });
  $('logout').addEventListener('click', logout);
  // The time format, for the console and the browser tests (a job of
  // every zone is not something their fixture can seed).
  window.cronledger = Object.freeze({fmtTime});
  startPolling();
  render(false);
})();
