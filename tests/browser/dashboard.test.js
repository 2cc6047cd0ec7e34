#!/usr/bin/env node
// Browser tests of the dashboard (docs/dashboard.md): headless Debian
// chromium driven by playwright-core, against a real `cronledger serve` on a
// SQLite ledger seeded by seed_ledger (its header lists the seeded runs and
// the counts asserted here).
//
// Environment (set by tests/CMakeLists.txt):
//   CRONLEDGER_BIN   the cronledger binary
//   SEED_BIN         tests/browser/seed_ledger's binary
//   SCREENSHOT_DIR   where each page's screenshot goes (build/test/screenshots)
//   CHROMIUM         the browser (default /usr/bin/chromium)
//   NODE_PATH        the folder holding node_modules/playwright-core (npm ci)
//
// Each check is named; the first failure is printed with its name, the
// test exits 1, and serve and the browser are stopped in every case. No
// wall-clock limit: waits are for a condition, with a generous bound.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawn, execFileSync} = require('child_process');
const {chromium} = require('playwright-core');

const BIN = mustEnv('CRONLEDGER_BIN');
const SEED = mustEnv('SEED_BIN');
const SHOTS = process.env.SCREENSHOT_DIR || path.join(process.cwd(), 'screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WAIT = 30000;  // the bound of every wait for a condition, in ms
const ONLY = process.argv[2] || '';  // run only the checks whose name contains this

function mustEnv(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`dashboard.test.js: set ${name}`);
    process.exit(2);
  }
  return v;
}

const CONFIG = `[server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
max_workers = 2

[[job]]
name = "daily_report"
schedule = "0 0 * * *"
timezone = "UTC"
partitions = ["acme", "globex", "initech"]
executor = "external"
misfire_grace = "3d"
backfill = { horizon = "40d" }

  [[job.step]]
  name = "generate"

  [[job.step]]
  name = "deliver"

[[job]]
name = "billing"
schedule = "0 0 * * *"
timezone = "UTC"
partitions = ["apac", "eu", "us"]
executor = "external"
misfire_grace = "3d"
backfill = { horizon = "40d" }

  [[job.step]]
  name = "settle"
`;

// ---- the harness -----------------------------------------------------------------

const results = [];
async function check(name, fn) {
  if (ONLY && !name.includes(ONLY)) return;
  const t = process.hrtime.bigint();
  try {
    await fn();
    results.push({name, ok: true});
    console.log(`ok    ${name} (${Number((process.hrtime.bigint() - t) / 1000000n)} ms)`);
  } catch (e) {
    results.push({name, ok: false});
    console.log(`FAIL  ${name}\n      ${String(e && e.stack || e).split('\n').join('\n      ')}`);
    throw e;
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}
function assertEq(actual, expected, message) {
  if (actual !== expected) {
    throw new Error(`${message}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cronledger-browser-'));
let serve = null;
let serveLog = '';
let browser = null;
let mainPage = null;  // screenshotted as failure.png when a check fails

function stopServe() {
  if (serve && serve.exitCode === null && serve.signalCode === null) {
    try { process.kill(serve.pid, 'SIGKILL'); } catch (e) { /* gone */ }
  }
}
process.on('exit', stopServe);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { stopServe(); process.exit(130); });
}

// Polls `fn` until it returns a truthy value (or WAIT runs out): the value.
async function until(fn, what) {
  const deadline = Date.now() + WAIT;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`waited ${WAIT} ms for ${what}; last: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function utcDate(offsetDays) {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() + offsetDays);
  return d.toISOString().slice(0, 10);
}

async function noHorizontalScroll(page, what) {
  const m = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth}));
  assert(m.scroll <= m.client, `${what}: horizontal scroll at 1366x768 (scrollWidth ${m.scroll} > clientWidth ${m.client})`);
}
// Every word of the cells matching `selector` stays on one line: a table
// squeezed so that a header reads "Expecte" over "d" is legible to no one.
async function noWordBroken(page, selector, what) {
  const broken = await page.evaluate((sel) => {
    const out = [];
    for (const cell of document.querySelectorAll(sel)) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (tops.size > 1) out.push(m[0]);
        }
      }
    }
    return out;
  }, selector);
  assert(broken.length === 0, `${what}: words broken across lines at 1366x768: ${broken.join(', ')}`);
}
async function shot(page, name) {
  fs.mkdirSync(SHOTS, {recursive: true});
  await page.screenshot({path: path.join(SHOTS, `${name}.png`), fullPage: true});
}
async function text(page, selector) {
  return (await page.locator(selector).first().textContent()).trim();
}
// Opens a page of the dashboard by its hash and waits until that page (not
// the one before it, whose elements may look alike) is what is shown.
async function show(page, base, hash) {
  await page.goto(`${base}/${hash}`);
  await page.waitForFunction((h) => document.getElementById('main').dataset.route === h, hash);
}
async function count(page, job, key) {
  return text(page, `tr[data-job="${job}"] td[data-count="${key}"]`);
}

// ---- the scenario ------------------------------------------------------------------

async function main() {
  const config = path.join(dir, 'cronledger.toml');
  fs.writeFileSync(config, CONFIG);
  execFileSync(SEED, ['seed', config], {stdio: 'inherit'});
  const today = utcDate(0);

  serve = spawn(BIN, ['serve', '--config', config], {stdio: ['ignore', 'pipe', 'pipe']});
  serve.stdout.on('data', (d) => { serveLog += d; });
  serve.stderr.on('data', (d) => { serveLog += d; });
  const link = await until(() => {
    if (serve.exitCode !== null) throw new Error(`serve exited ${serve.exitCode}:\n${serveLog}`);
    const m = serveLog.match(/cronledger serve: dashboard login \(one-time link[^)]*\): (http:\/\/127\.0\.0\.1:\d+\/login\?code=[0-9a-f]+)/);
    return m && m[1];
  }, 'serve\'s one-time login link on stderr');
  const base = link.replace(/\/login\?.*$/, '');
  const token = fs.readFileSync(path.join(dir, 'cronledger.token'), 'utf8').trim();
  assert(!serveLog.includes(token), 'serve\'s output must not hold the token');

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const newPage = async () => {
    const context = await browser.newContext({viewport: {width: 1366, height: 768}});
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.on('pageerror', (e) => console.log(`      (page error: ${e.message})`));
    return page;
  };

  const page = await newPage();
  mainPage = page;

  await check('login with the one-time link', async () => {
    await page.goto(link);
    await page.waitForSelector('#overview');
    assertEq(new URL(page.url()).pathname, '/', 'the link redirects to the dashboard');
    assert(!page.url().includes('code='), 'the code does not stay in the address bar');
    const cookies = await page.context().cookies();
    const c = cookies.find((x) => x.name === 'cronledger_session');
    assert(c, 'a session cookie');
    assert(c.httpOnly, 'the cookie is HttpOnly');
    assertEq(c.sameSite, 'Strict', 'the cookie is SameSite=Strict');
    assertEq(c.path, '/', 'cookie path');
    assertEq(await text(page, '#who'), 'local (operate)', 'who is logged in');
  });

  await check('the overview shows the seeded counts', async () => {
    const want = {
      daily_report: {expected: '3', succeeded: '1', failed: '1', unknown: '0', missing: '0', waived: '0', in_progress: '1'},
      billing: {expected: '3', succeeded: '0', failed: '0', unknown: '1', missing: '1', waived: '1', in_progress: '0'},
    };
    for (const [job, counts] of Object.entries(want)) {
      for (const [key, n] of Object.entries(counts)) assertEq(await count(page, job, key), n, `${job} ${key}`);
      const row = page.locator(`tr[data-job="${job}"]`);
      assert((await row.getAttribute('class')).includes('wrong'), `${job}'s row stands out`);
      assert((await row.textContent()).includes(today), `${job}'s business date is today`);
    }
    assertEq(await text(page, 'tr[data-job="daily_report"] [data-step="generate"]'), 'generate 1/3', 'generated');
    assertEq(await text(page, 'tr[data-job="daily_report"] [data-step="deliver"]'), 'deliver 1/3', 'delivered');
    await noHorizontalScroll(page, 'overview');
    await noWordBroken(page, 'table.overview th, table.overview td:first-child', 'overview');
    await shot(page, 'overview');
  });

  await check('the overview lists the serve node as alive', async () => {
    // serve beats every 5 s; the page refreshes live.
    await until(async () => (await page.locator('#nodes tr[data-node]').count()) === 1, 'the node table');
    const row = page.locator('#nodes tr[data-node]');
    assert((await row.textContent()).includes('alive'), 'the node is alive');
    assertEq(await text(page, '#nodes h2 span'), 'all 1 alive', 'the nodes summary');
    assert((await text(page, '#nodes thead')).includes('Roles'), 'the roles column');
  });

  await check('a used login link does not log in again', async () => {
    const other = await newPage();
    await other.goto(link);
    await other.waitForSelector('#login-form');
    assert((await text(other, '#login-error')).includes('used already or has expired'), 'says why');
    await noHorizontalScroll(other, 'login');
    await shot(other, 'login');
    await other.context().close();
  });

  await check('login with the token form (a wrong token is refused)', async () => {
    const other = await newPage();
    await other.goto(`${base}/`);
    await other.waitForSelector('#login-form');
    await other.fill('#token', 'not-the-token-0123456789');
    await other.click('#login-form button[type=submit]');
    await until(async () => (await text(other, '#login-error')).includes('not valid'), 'the refusal');
    await other.fill('#token', token);
    await other.click('#login-form button[type=submit]');
    await other.waitForSelector('#overview');
    assertEq(await count(other, 'daily_report', 'expected'), '3', 'the overview after the form');
    await other.context().close();
  });

  await check('a link from an alert notice lands on its page after the login', async () => {
    const other = await newPage();
    await other.goto(`${base}/#/job/daily_report`);
    await other.waitForSelector('#login-form');
    await other.fill('#token', token);
    await other.click('#login-form button[type=submit]');
    await other.waitForSelector('#grid');
    assert(
        (await other.evaluate(() => location.hash)) === '#/job/daily_report', 'the page linked to');
    await other.context().close();
  });

  await check('the job page: a 14-day grid and one chart point per seeded date', async () => {
    await page.click('tr[data-job="daily_report"] a');
    await page.waitForSelector('#grid');
    assertEq(await page.locator('#finish-chart circle.point').count(), 10, 'points of the finish-time chart');
    assertEq(await page.locator('#finish-chart circle.point.incomplete').count(), 2, 'dates not complete (globex failed)');
    assertEq(await page.locator('#grid tbody tr').count(), 3, 'one row per partition');
    assertEq(await page.locator('#grid a.cell').count(), 30, 'a cell per seeded key, each a link');
    assertEq(await page.locator('#grid a.cell[data-state="failed"]').count(), 2, 'failed cells');
    assert(await page.locator('#duration-chart rect.bar').count() >= 4, 'a duration histogram');
    // The legend tells every state apart at a glance: missing is not awaiting approval.
    const marks = await page.locator('.legend > span > .cell').evaluateAll((cs) => cs.map((c) => c.textContent));
    assertEq(marks.length, 7, 'seven states in the legend');
    assertEq(new Set(marks).size, marks.length, `a glyph of its own for each: ${marks}`);
    await noHorizontalScroll(page, 'job page');
    await shot(page, 'job');
    // Times in a job's own zone, UTC beside; the UTC date too when it differs.
    const times = await page.evaluate(
        () =>
            [cronledger.fmtTime('2026-12-03T00:00:00Z', 'Asia/Seoul'),
             cronledger.fmtTime('2026-12-02T23:30:05Z', 'Asia/Seoul', true),
             cronledger.fmtTime('2026-12-03T14:00:00Z', 'America/New_York'),
             cronledger.fmtTime('2026-12-03T00:00:00Z', 'UTC'),
             cronledger.fmtTime('2026-12-03T00:00:00Z', 'Not/AZone')]);
    assertEq(
        JSON.stringify(times), JSON.stringify([
          '2026-12-03 09:00 GMT+9 · 00:00Z', '2026-12-03 08:30:05 GMT+9 · 12-02 23:30:05Z',
          '2026-12-03 09:00 EST · 14:00Z', '2026-12-03 00:00Z', '2026-12-03 00:00Z'
        ]),
        'times in the business zone');
  });

  await check('a run seeded after the page loaded appears without a reload', async () => {
    const overview = await page.context().newPage();
    await overview.goto(`${base}/#/`);
    await overview.waitForSelector('#overview');
    assertEq(await count(overview, 'daily_report', 'succeeded'), '1', 'before');
    await page.evaluate(() => { window.__sameDocument = true; });
    await overview.evaluate(() => { window.__sameDocument = true; });
    const cell = `#grid a.cell[data-cell="initech/${today}"]`;
    assertEq(await page.locator(cell).getAttribute('data-state'), 'pending', 'initech today before');
    execFileSync(SEED, ['finish', config], {stdio: 'inherit'});
    await until(async () => (await page.locator(cell).getAttribute('data-state')) === 'succeeded', 'the grid cell to turn succeeded');
    await until(async () => (await count(overview, 'daily_report', 'succeeded')) === '2', 'the overview to count 2 succeeded');
    assertEq(await count(overview, 'daily_report', 'in_progress'), '0', 'in progress after');
    assert(await page.evaluate(() => window.__sameDocument === true), 'the job page was not reloaded');
    assert(await overview.evaluate(() => window.__sameDocument === true), 'the overview was not reloaded');
    await overview.close();
  });

  let failedRun = null;
  await check('a run opens: attempts, end class, exit status, log tail as text', async () => {
    await page.click(`#grid a.cell[data-cell="globex/${today}"]`);
    await page.waitForSelector('#attempts');
    failedRun = Number(new URL(page.url()).hash.split('/')[2]);
    assert(failedRun > 0, 'the run page of a run id');
    const row = await text(page, '#attempts tbody tr');
    assert(row.includes('permanent') && row.includes('65'), `end class and exit status in "${row}"`);
    assert((await text(page, '#log')).includes('bad row 17'), 'the log tail');
    assert((await text(page, '#events')).includes('claimed'), 'the run\'s events');
    await noHorizontalScroll(page, 'run page');
    await shot(page, 'run');
    // A log holding markup shows it as text.
    await show(page, base, `#/job/daily_report`);
    await page.click(`#grid a.cell[data-cell="acme/${today}"]`);
    await page.waitForSelector('#log');
    assert((await text(page, '#log')).includes('<b>delivered</b>'), 'markup in a log is shown as text');
    assertEq(await page.locator('#log b').count(), 0, 'and never parsed');
  });

  await check('rerun: the preview, then a reason, then it goes through and shows in the events', async () => {
    await show(page, base, `#/run/${failedRun}`);
    await page.waitForSelector('#run-rerun');
    await page.click('#run-rerun');
    await page.waitForSelector('#preview-button');
    assert(await page.locator('#confirm').isDisabled(), 'no confirming before the preview');
    await page.click('#preview-button');
    await page.waitForSelector('#would-queue-count');
    assertEq(await text(page, '#would-queue-count'), 'Would queue 1 run(s)', 'the impact');
    assertEq(await text(page, '[data-preview="failed"]'), '1', 'the preview counts the failed run');
    await noHorizontalScroll(page, 'rerun dialog');
    await shot(page, 'rerun-preview');
    await page.click('#confirm');
    await until(async () => (await text(page, '#dialog-error')).includes('reason'), 'the demand for a reason');
    const reason = 'input <fixed> & "retried"';
    await page.fill('#reason', reason);
    await page.click('#confirm');
    await page.waitForSelector('#dialog-backdrop', {state: 'hidden'});
    assert((await text(page, '#banner')).includes('1 run(s) queued'), 'says what was queued');
    const event = page.locator('#events tr[data-event="rerun"]');
    await until(async () => (await event.count()) === 1, 'the rerun event on the run page');
    assert((await event.textContent()).includes(reason), 'the reason, as typed');
    assertEq(await event.locator('td').nth(2).textContent(), 'local', 'the actor is the token\'s name');
  });

  await check('a form posted without the CSRF token, or with a wrong one, is refused', async () => {
    const before = await page.evaluate(async () => (await (await fetch('/v1/jobs/daily_report')).json()).state);
    const answers = await page.evaluate(async () => {
      const post = async (headers) => {
        const r = await fetch('/v1/pause', {method: 'POST', credentials: 'same-origin',
          headers: {'Content-Type': 'application/json', ...headers},
          body: JSON.stringify({job: 'daily_report', reason: 'csrf test'})});
        return {status: r.status, body: await r.json()};
      };
      return {missing: await post({}), wrong: await post({'X-CSRF-Token': 'wrong'})};
    });
    for (const [what, a] of Object.entries(answers)) {
      assertEq(a.status, 403, `${what} CSRF token: status`);
      assertEq(a.body.error, 'forbidden', `${what} CSRF token: the API's error shape`);
      assert(a.body.message.includes('CSRF'), `${what}: the message names the CSRF token`);
    }
    // A plain HTML form, as another page would post it.
    await page.evaluate(() => {
      const f = document.createElement('form');
      f.method = 'POST';
      f.action = '/v1/pause';
      const i = document.createElement('input');
      i.name = 'reason';
      i.value = 'csrf form';
      f.appendChild(i);
      document.body.appendChild(f);
      f.submit();
    });
    await page.waitForURL(`${base}/v1/pause`);
    const body = JSON.parse(await page.locator('body').textContent());
    assertEq(body.error, 'forbidden', 'the form post is refused');
    await page.goto(`${base}/`);
    await page.waitForSelector('#overview');
    const after = await page.evaluate(async () => (await (await fetch('/v1/jobs/daily_report')).json()).state);
    assertEq(before, 'active', 'active before');
    assertEq(after, 'active', 'nothing changed');
    const events = await page.evaluate(async () => (await (await fetch('/v1/events?type=paused')).json()).events);
    assertEq(events.length, 0, 'no paused event');
  });

  await check('pause and resume with a reason', async () => {
    await show(page, base, `#/job/daily_report`);
    await page.waitForSelector('#pause');
    await page.click('#pause');
    await page.fill('#reason', 'upstream outage');
    await page.click('#confirm');
    await page.waitForSelector('#resume');
    assertEq(await text(page, '.toolbar .badge'), 'paused', 'the job is paused');
    await show(page, base, `#/`);
    await page.waitForSelector('tr[data-job="daily_report"] .s-paused');
    await show(page, base, `#/job/daily_report`);
    await page.click('#resume');
    await page.fill('#reason', 'upstream back');
    await page.click('#confirm');
    await page.waitForSelector('#pause');
    await show(page, base, `#/events`);
    await page.waitForSelector('#events');
    const types = await page.locator('#events tr').evaluateAll((rows) => rows.map((r) => r.dataset.event));
    assert(types.includes('paused') && types.includes('resumed'), `paused and resumed events in ${types}`);
    assert((await text(page, '#events tr[data-event="paused"]')).includes('upstream outage'), 'the pause reason');
    // An action sent with a `by` (as `cronledger --server ... --by` sends
    // it): the session's token acts, the name is shown beside it.
    const answer = await page.evaluate(async () => {
      const csrf = (await (await fetch('/v1/session')).json()).csrf_token;
      const post = (path, body) => fetch(path, {
        method: 'POST',
        credentials: 'same-origin',
        headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
        body: JSON.stringify(body)
      });
      const paused =
          await post('/v1/pause', {job: 'daily_report', reason: 'on call for alice', by: 'alice'});
      const resumed = await post('/v1/resume', {job: 'daily_report', reason: 'back'});
      return [paused.status, resumed.status];
    });
    assertEq(JSON.stringify(answer), '[200,200]', 'the pause and resume with a by');
    await show(page, base, `#/events`);
    const forAlice =
        page.locator('#events tr[data-event="paused"]', {hasText: 'on call for alice'});
    await until(async () => (await forAlice.count()) === 1, 'the pause made for alice');
    const actorCell = (await forAlice.locator('td').nth(3).textContent()).trim();
    assert(actorCell.startsWith('local'), `the token acts: ${actorCell}`);
    assert(actorCell.includes('on behalf of alice'), `the by beside it: ${actorCell}`);
    // A run key stays on one line.
    const runCell = page.locator('#events tr td:nth-child(3) a').first();
    assertEq(await runCell.count(), 1, 'an event of a run');
    const box = await runCell.boundingBox();
    assert(box.height < 24, `a run key on one line, not ${box.height}px high`);
    // A long detail opens to the whole of it.
    const long = page.locator('#events details.long').first();
    await until(async () => (await long.count()) === 1, 'a long detail (config_changed)');
    assert(!(await long.locator('pre').isVisible()), 'closed at first');
    await long.locator('summary').click();
    assert(await long.locator('pre').isVisible(), 'opened');
    assert((await long.locator('pre').textContent()).includes('\n'), 'the whole detail, laid out');
    await noHorizontalScroll(page, 'events page');
    await shot(page, 'events');
    // Filtered by type and actor (the name acted for counts), kept in the hash.
    await page.fill('#events-type', 'paused');
    await page.fill('#events-actor', 'alice');
    await page.click('#events-apply');
    await until(async () => (await page.evaluate(() => location.hash)) === '#/events?type=paused&actor=alice',
      'the filters in the hash');
    await until(async () => {
      const rows = await page.locator('#events tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.event));
      return rows.length === 1 && rows[0] === 'paused';
    }, 'only alice\'s pause');
    assertEq(await page.inputValue('#events-actor'), 'alice', 'the filter shown as applied');
    // A filter the API refuses keeps the form and says why.
    await page.fill('#events-run', 'x');
    await page.click('#events-apply');
    await until(async () => (await page.locator('#events-error').count()) === 1, 'the refusal');
    assert((await text(page, '#events-error')).includes('run_id'), 'names the parameter');
    assertEq(await page.inputValue('#events-run'), 'x', 'the form kept');
    await page.click('#events-clear');
    await until(async () => (await page.locator('#events tbody tr').count()) > 1, 'every event again');
  });

  await check('the gaps page', async () => {
    await show(page, base, `#/gaps`);
    await page.waitForSelector('#gaps');
    const keys =
        await page.locator('#gaps tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.gap));
    assert(
        keys.includes(`daily_report/globex/${utcDate(-3)}`),
        `globex's failed run of D-3 in ${keys}`);
    assert(keys.includes(`billing/eu/${today}`), `billing eu (unknown) in ${keys}`);
    await noHorizontalScroll(page, 'gaps page');
    await shot(page, 'gaps');
    // A key awaiting approval is approved from here, with a reason. serve's
    // gap watch holds apac's misfired key for approval: wait for that.
    const apac = `billing/apac/${today}`;
    await until(async () => page.evaluate(async (key) => {
      const gaps = (await (await fetch('/v1/gaps?job=billing')).json()).gaps;
      return gaps.some((g) => g.run_key === key && g.cause === 'awaiting_approval');
    }, apac), 'apac awaiting approval');
    await show(page, base, `#/gaps`);
    await page.waitForSelector('#gaps');
    await page.click(`#gaps tr[data-gap="${apac}"] button`);
    await page.fill('#reason', 'bank confirmed the file');
    await page.click('#confirm');
    await page.waitForSelector('#dialog-backdrop', {state: 'hidden'});
    await until(
        async () => (await page.locator(`#gaps tr[data-gap="${apac}"]`).count()) === 0,
        'the approved key to leave the gaps');
    const events = await page.evaluate(
        async () => (await (await fetch('/v1/events?type=approve')).json()).events);
    assertEq(events.length, 1, 'one approve event');
    assertEq(events[0].reason, 'bank confirmed the file', 'its reason');
  });

  await check('backfill: the preview, then a reason, then it goes through', async () => {
    // The gaps page approved apac's key (it is in flight or done now); us's
    // coalesced key is waived and waits for "include waived".
    await show(page, base, `#/job/billing`);
    await page.waitForSelector('#backfill');
    await page.click('#backfill');
    // Dates are ISO whatever the locale, prefilled with the job's business date.
    assertEq(await page.getAttribute('#backfill-from', 'type'), 'text', 'no locale date picker');
    assert(/^\d{4}-\d{2}-\d{2}$/.test(await page.inputValue('#backfill-from')),
      `an ISO date: ${await page.inputValue('#backfill-from')}`);
    assert((await text(page, '#dialog')).includes('await approval'), 'the blurb names approval');
    await page.fill('#backfill-from', today);
    await page.fill('#backfill-to', today);
    await page.click('#preview-button');
    await page.waitForSelector('#would-queue-count');
    assertEq(await text(page, '#would-queue-count'), 'Would queue 0 run(s)', 'a waived key needs "include waived"');
    assert(await page.locator('#confirm').isDisabled(), 'nothing to confirm');
    // Every key it leaves alone says why, and what would queue it.
    const left = await text(page, '#not-queued');
    assert(
        left.includes(`billing/us/${today}`) && left.includes('waived (coalesced) on purpose') &&
            left.includes('--include-waived'),
        `the waived key, why and how: ${left}`);
    await page.check('#backfill-waived');
    assertEq(await page.locator('#would-queue-count').count(), 0, 'a changed form drops the preview');
    await page.click('#preview-button');
    await until(async () => (await text(page, '#would-queue-count')) === 'Would queue 1 run(s)', 'the coalesced key of us');
    assert((await text(page, '#preview ul')).includes(`billing/us/${today}`), 'names the key');
    await shot(page, 'backfill-preview');
    await page.fill('#reason', 'bank was down');
    await page.click('#confirm');
    await page.waitForSelector('#dialog-backdrop', {state: 'hidden'});
    assert((await text(page, '#banner')).includes('1 run(s) queued'), 'queued');
    const events = await page.evaluate(async () => (await (await fetch('/v1/events?type=backfill')).json()).events);
    assertEq(events.length, 1, 'one backfill event');
    assertEq(events[0].reason, 'bank was down', 'its reason');
  });

  await check(
      'resolve an effect in doubt: the choices, what each does, a reason; retry warns first',
      async () => {
        const runs = await page.evaluate(
            async () => (await (await fetch('/v1/runs?job=billing')).json()).runs);
        const unknown = runs.find((r) => r.run_key === `billing/eu/${today}`);
        assertEq(unknown && unknown.state, 'unknown', 'the seeded unknown run');
        await show(page, base, `#/run/${unknown.id}`);
        await page.waitForSelector('#run-resolve');
        await page.click('#run-retry');
        await page.waitForSelector('#retry-warning');
        assert(
            (await text(page, '#retry-warning')).includes(`settlement-eu-${today}`),
            'names the effect in doubt');
        assert(
            (await text(page, '#retry-warning')).includes('--reconcile'), 'says what would tell');
        await page.click('#dialog button:has-text("Close")');
        await page.click('#run-resolve');
        await page.waitForSelector('#resolve-effect');
        assertEq(
            (await page.locator('#resolve-as option').evaluateAll((os) => os.map((o) => o.value)))
                .join(' '),
            'committed failed', 'the choices for an effect');
        assert(
            (await text(page, '#resolve-preview')).includes('does not do it again'),
            'what committed does');
        await page.selectOption('#resolve-as', 'failed');
        assert(
            (await text(page, '#resolve-preview')).includes('does it again'), 'what failed does');
        assert(
            (await text(page, '#resolve-preview')).includes('queued for a new attempt'),
            'and the run after it');
        await noHorizontalScroll(page, 'resolve dialog');
        await shot(page, 'resolve-effect');
        await page.click('#confirm');
        await until(
            async () => (await text(page, '#dialog-error')).includes('reason'),
            'the demand for a reason');
        await page.selectOption('#resolve-as', 'committed');
        await page.fill('#reason', 'the bank has the file');
        await page.click('#confirm');
        await page.waitForSelector('#dialog-backdrop', {state: 'hidden'});
        assert(
            (await text(page, '#banner')).includes('resolved as committed; the run is pending now'),
            'says what happened');
        const event = page.locator('#events tr[data-event="resolve"]');
        await until(async () => (await event.count()) === 1, 'the resolve event on the run page');
        assert((await event.textContent()).includes('the bank has the file'), 'with its reason');
        const after = await page.evaluate(
            async (id) => (await (await fetch(`/v1/runs/${id}`)).json()), unknown.id);
        assertEq(after.effects[0].state, 'committed', 'the effect settled');
        assert(await page.locator('#run-resolve').isDisabled(), 'nothing left to resolve');
      });

  await check('log out', async () => {
    await page.click('#logout');
    await page.waitForSelector('#login-form');
    const status = await page.evaluate(async () => (await fetch('/v1/jobs')).status);
    assertEq(status, 401, 'the session is over');
  });
}

(async () => {
  let failed = false;
  try {
    await main();
  } catch (e) {
    failed = true;
    if (!results.some((r) => !r.ok)) console.log(`FAIL  setup\n      ${e && e.stack || e}`);
    if (mainPage) {
      await shot(mainPage, 'failure').catch(() => {});
      const problem = await mainPage.locator('#dialog-error, #banner, .error').allTextContents().catch(() => []);
      console.log(`      page ${mainPage.url()}; messages: ${JSON.stringify(problem.filter(Boolean))}`);
    }
    if (serveLog) console.log(`---- serve's output ----\n${serveLog.slice(-4000)}`);
  } finally {
    if (browser) await browser.close().catch(() => {});
    stopServe();
    if (serve) {
      await new Promise((r) => (serve.exitCode !== null || serve.signalCode !== null ? r() : serve.once('exit', r)));
    }
    fs.rmSync(dir, {recursive: true, force: true});
  }
  console.log(`${results.filter((r) => r.ok).length} of ${results.length} checks passed; screenshots in ${SHOTS}`);
  process.exit(failed ? 1 : 0);
})();
