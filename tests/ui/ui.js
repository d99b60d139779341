// Drives Debian's chromium (headless, through playwright-core) through the readingsd page
// against a real daemon fed by a real mosquitto. Run by ui_test.cc:
//   node ui.js --readingsd URL --mqtt-port N --token T --out DIR
// Exits 0 when every check passes; prints each failure.
'use strict';
const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1];
const base = args.readingsd;
const hostile = '<img src=x onerror=alert(1)>';
let failures = 0;
function check(ok, what) {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures++;
}

function publish(device, readings) {
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', args['mqtt-port'], '-q', '1',
    '-t', `sensors/${device}/readings`, '-m', JSON.stringify(readings)]);
}

async function waitForReadings(count) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(base + '/v1/devices', { headers: { Authorization: 'Bearer ' + args.token } });
    const body = await res.json();
    if (body.devices.reduce((n, d) => n + d.readings, 0) >= count) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the readings did not arrive');
}

async function apiGet(pathAndQuery) {
  const res = await fetch(new URL(pathAndQuery, base), { headers: { Authorization: 'Bearer ' + args.token } });
  if (!res.ok) throw new Error(pathAndQuery + ': ' + res.status + ' ' + (await res.text()));
  return res;
}

// RFC 4180 rows (CRLF line ends; a quoted field may hold anything, its quotes doubled).
function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') { field += '"'; i++; }
    else if (c === '"') quoted = !quoted;
    else if (quoted) field += c;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\r' && text[i + 1] === '\n') { row.push(field); rows.push(row); row = []; field = ''; i++; }
    else field += c;
  }
  return rows;
}

// Whether any canvas of the chart has a pixel drawn.
function chartInked(page) {
  return page.evaluate(() => [...document.querySelectorAll('#chart canvas')].some((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
    return false;
  }));
}

async function waitForReady() {
  for (let i = 0; i < 300; i++) {
    const res = await fetch(base + '/readyz', { headers: { Authorization: 'Bearer ' + args.token } });
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('readingsd did not become ready');
}

async function main() {
  await waitForReady();
  // ui-a: 30 readings a minute apart up to a minute ago; ui-b: 2 readings an hour apart, the
  // last a day ago, so it is silent far beyond its usual interval.
  const now = Math.floor(Date.now() / 1000) * 1000;
  const a = [];
  for (let i = 0; i < 30; i++) {
    a.push({ readingTs: new Date(now - (30 - i) * 60000).toISOString(), temperature: 20 + i / 2, note: hostile });
  }
  publish('ui-a', a);
  publish('ui-b', [{ readingTs: new Date(now - 25 * 3600000).toISOString(), temperature: 1 },
                   { readingTs: new Date(now - 24 * 3600000).toISOString(), temperature: 2 }]);
  // ui-long: 300 readings ten minutes apart (50 hours) with a string that CSV must quote.
  const quoted = '<script>alert(1)</script>, "quoted"\nline two';
  const long = [];
  for (let i = 0; i < 300; i++) {
    long.push({ readingTs: new Date(now - 90000 - (299 - i) * 600000).toISOString(), temperature: 20 + i / 4, note: quoted });
  }
  publish('ui-long', long);
  await waitForReadings(332);

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const allRequests = [];  // every request the page made, for the format=columns check at the end
  page.on('request', (r) => allRequests.push(r.url()));

  // Auth is on: the page asks for the token, then keeps it for the tab.
  await page.goto(base + '/ui/');
  await page.locator('#token-form').waitFor({ state: 'visible' });
  check(true, 'the token prompt is shown when the API answers 401');
  await page.screenshot({ path: path.join(args.out, 'ui-token.png') });
  await page.fill('#token', args.token);
  await page.click('#token-form button');

  // Fleet: both devices, the silent one marked, the hostile string shown as text.
  await page.locator('#devices tbody tr').nth(1).waitFor();
  const ids = await page.locator('#devices tbody td:first-child a').allTextContents();
  check(JSON.stringify(ids) === JSON.stringify(['ui-a', 'ui-b', 'ui-long']), 'the fleet lists ui-a, ui-b and ui-long: ' + JSON.stringify(ids));
  const classes = await page.locator('#devices tbody tr').evaluateAll((rows) => rows.map((r) => r.className));
  check(classes[0] === '' && classes[1] === 'silent' && classes[2] === '',
        'ui-b (silent a day, usually hourly) is marked silent, ui-a and ui-long not: ' + JSON.stringify(classes));
  const values = await page.locator('#devices tbody tr').nth(0).locator('td').nth(2).textContent();
  check(values.includes(hostile), 'the attribute string is shown as text: ' + values);
  check(await page.locator('#devices img').count() === 0, 'no element was made from the attribute string');
  check(await page.locator('#hot tbody tr').count() >= 1, 'the hot partitions are listed');
  await page.screenshot({ path: path.join(args.out, 'ui-fleet.png'), fullPage: true });

  // Device: chart drawn, table paged by cursor.
  await page.locator('#devices a', { hasText: 'ui-a' }).click();
  await page.locator('#readings tbody tr').first().waitFor();
  await page.locator('#chart canvas').first().waitFor();
  check(await chartInked(page), 'the chart canvas is drawn on');
  const first = await page.locator('#readings tbody td:first-child').allTextContents();
  check(first.length === 20 && first[0] === a[0].readingTs.replace('.000Z', '.000000000Z'),
        'the table shows the first 20 readings: ' + first[0]);
  const firstValues = await page.locator('#readings tbody td:nth-child(2)').first().textContent();
  check(firstValues === 'note=' + JSON.stringify(hostile) + ' temperature=20' ||
        firstValues === 'temperature=20 note=' + JSON.stringify(hostile),
        'the table row shows the reading\'s values, the string as text: ' + firstValues);
  check(await page.locator('#readings img').count() === 0, 'no element was made from the attribute string in the table');
  await page.screenshot({ path: path.join(args.out, 'ui-device.png'), fullPage: true });
  await page.click('#readings-more');
  // The page's CSP forbids eval, so wait through a locator rather than waitForFunction.
  await page.locator('#readings tbody tr').nth(10).waitFor({ state: 'detached' });
  const second = await page.locator('#readings tbody td:first-child').allTextContents();
  check(second[0] === a[20].readingTs.replace('.000Z', '.000000000Z') && second.length === 10,
        'the next page holds readings 21 to 30: ' + second[0]);
  check(await page.locator('#readings-more').isHidden(), 'no next page after the last');

  // ui-long: the default window (an hour) is charted from the raw readings, a three-day window
  // from /aggregate; which was asked for is seen in the browser's own requests.
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.click('#home');
  // The link, not the hot-partitions cell of the same text (that table may still show its last load).
  await page.locator('#devices a', { hasText: 'ui-long' }).click();
  await page.locator('#device-id', { hasText: 'ui-long' }).waitFor();  // ui-a's chart is gone
  await page.locator('#chart[data-source="readings"]').waitFor();
  check(await page.locator('#chart').getAttribute('data-points') === '6', 'the hour is charted from its 6 raw readings');
  check(requests.some((u) => u.includes('/v1/devices/ui-long/readings?') && u.includes('attributes=temperature')) &&
        !requests.some((u) => u.includes('/aggregate')), 'a short window asks for readings, not aggregates');
  const chartUrl = requests.find((u) => u.includes('/v1/devices/ui-long/readings?') && u.includes('attributes=temperature'));
  check(new URL(chartUrl).searchParams.get('format') === 'columns', 'the chart\'s readings were asked as format=columns: ' + chartUrl);
  const tableUrl = requests.find((u) => u.includes('/v1/devices/ui-long/readings?') && u.includes('limit=20'));
  check(new URL(tableUrl).searchParams.get('format') === 'columns', 'the table\'s readings were asked as format=columns: ' + tableUrl);
  await page.fill('#from', new Date(now - 3 * 86400000).toISOString().slice(0, 19));
  await page.locator('#window button', { hasText: 'Show' }).click();
  await page.locator('#chart[data-source="aggregate"]').waitFor();
  const aggregateUrl = requests.find((u) => u.includes('/v1/devices/ui-long/aggregate?'));
  const asked = new URL(aggregateUrl).searchParams;
  const buckets = (Date.parse(asked.get('to')) - Date.parse(asked.get('from'))) / 1000 / parseInt(asked.get('step'), 10);
  check(buckets <= 300, 'the aggregate step keeps the window to at most 300 buckets: ' + asked.get('step'));
  check(asked.get('format') === 'columns', 'the aggregate was asked as format=columns: ' + aggregateUrl);
  const answer = await (await apiGet(aggregateUrl)).json();
  const points = Number(await page.locator('#chart').getAttribute('data-points'));
  check(points === answer.start.length && points > 0 && points < 300,
        'the chart drew the ' + answer.start.length + ' buckets of /aggregate, not the 300 readings: ' + points);
  check(await chartInked(page), 'the long window\'s chart is drawn on');
  await page.screenshot({ path: path.join(args.out, 'ui-device-long.png'), fullPage: true });

  // The CSV of the three days, with the string attribute too: every page walked, one file.
  await page.check('#attrs input[value="note"]');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
  await download.saveAs(path.join(args.out, 'ui-long.csv'));
  const csv = fs.readFileSync(path.join(args.out, 'ui-long.csv'), 'utf8');
  const csvUrls = requests.filter((u) => u.includes('/v1/devices/ui-long/readings?') && u.includes('format=csv'));
  check(csvUrls.length === 3 && csvUrls.slice(1).every((u) => u.includes('cursor=')),
        'the download walked the window\'s 3 pages by cursor: ' + csvUrls.length);
  check(await page.locator('#csv-status').textContent() === '300 readings saved', 'the page says 300 readings were saved');
  await page.screenshot({ path: path.join(args.out, 'ui-csv.png') });
  // The API's readings of the same window, as JSON, row by row.
  const windowParams = new URL(csvUrls[0]).searchParams;
  windowParams.delete('format');
  const names = windowParams.get('attributes').split(',');
  const expected = [['deviceId', 'readingTs', ...names]];
  let cursor = null;
  do {
    if (cursor) windowParams.set('cursor', cursor);
    const body = await (await apiGet('/v1/devices/ui-long/readings?' + windowParams)).json();
    for (const it of body.items) expected.push([it.deviceId, it.readingTs, ...names.map((n) => n in it ? String(it[n]) : '')]);
    cursor = body.nextCursor;
  } while (cursor);
  check(JSON.stringify(names) === '["note","temperature"]', 'the CSV holds the chosen attributes: ' + names);
  check(expected.length === 301 && JSON.stringify(parseCsv(csv)) === JSON.stringify(expected),
        'the CSV is the API\'s 300 readings of the window, the quoted string intact');
  windowParams.delete('cursor');
  windowParams.set('format', 'csv');
  windowParams.set('limit', '1000');
  check(await (await apiGet('/v1/devices/ui-long/readings?' + windowParams)).text() === csv,
        'the file is byte for byte the window\'s CSV in one page');

  // Every JSON page of readings or buckets the page asked for was columns; only the download is rows of CSV.
  const pages = allRequests.filter((u) => /\/v1\/devices\/[^/]+\/(readings|aggregate)\?/.test(u) && !u.includes('format=csv'));
  check(pages.length >= 7 && pages.every((u) => new URL(u).searchParams.get('format') === 'columns'),
        'every readings and aggregate request of the page was format=columns: ' +
        JSON.stringify(pages.filter((u) => new URL(u).searchParams.get('format') !== 'columns')));
  check(dialogs.length === 0, 'no script ran from the data (dialogs: ' + JSON.stringify(dialogs) + ')');
  check(errors.length === 0, 'no page errors: ' + JSON.stringify(errors));
  await browser.close();
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
