// The readingsd page: talks only to the public HTTP API. Every string from the API (device ids,
// attribute names and values) is untrusted and goes into the page through textContent only.
'use strict';

const $ = (id) => document.getElementById(id);

// The token is asked for only when the API answers 401, and kept for this tab only.
async function api(path) {
  const token = sessionStorage.getItem('readingsd-token');
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  const res = await fetch(path, { headers });
  if (res.status === 401) {
    $('token-form').hidden = false;
    throw new Error('this daemon needs a bearer token');
  }
  if (!res.ok) throw new Error(path + ': ' + res.status + ' ' + (await res.text()));
  return res;
}

function showError(e) {
  $('error').hidden = false;
  $('error').textContent = String(e.message || e);
}

function cell(tr, text) {
  const td = document.createElement('td');
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

function attributes(item) {
  return Object.keys(item).filter((k) => k !== 'deviceId' && k !== 'readingTs');
}

function valuesText(item) {
  return attributes(item).map((k) => k + '=' + JSON.stringify(item[k])).join(' ');
}

// A format=columns page's row i as valuesText writes an item: its attributes in the order of
// the page's columns, leaving out the nulls (a reading without that attribute).
function rowText(page, i) {
  return Object.entries(page.columns).filter(([, values]) => values[i] !== null)
    .map(([name, values]) => name + '=' + JSON.stringify(values[i])).join(' ');
}

// A column's numbers for the chart: null where a row has none or a value of another type.
function numbers(values, length) {
  return Array.from({ length }, (_, i) => (values && typeof values[i] === 'number' ? values[i] : null));
}

// "Usual" interval: the registry's (lastReadingTs - firstReadingTs) / (readings - 1), the mean
// gap between a device's readings. A device is marked silent when the time since its last
// reading exceeds ten of those gaps (and at least a minute); with fewer than two readings
// there is no usual interval and the device is never marked.
function silent(d, now) {
  if (!(d.readings >= 2)) return false;
  const first = Date.parse(d.firstReadingTs), last = Date.parse(d.lastReadingTs);
  const usual = (last - first) / (d.readings - 1);
  return now - last > Math.max(10 * usual, 60000);
}

let devicesCursor = null;

async function loadDevices(more) {
  const body = $('devices').tBodies[0];
  if (!more) { body.replaceChildren(); devicesCursor = null; }
  const q = new URLSearchParams({ limit: '50' });
  if ($('prefix').value) q.set('prefix', $('prefix').value);
  if (more && devicesCursor) q.set('cursor', devicesCursor);
  const page = await (await api('/v1/devices?' + q)).json();
  const now = Date.now();
  for (const d of page.devices) {
    const tr = document.createElement('tr');
    if (silent(d, now)) tr.className = 'silent';
    const a = document.createElement('a');
    a.href = '#device=' + encodeURIComponent(d.deviceId);
    a.textContent = d.deviceId;
    cell(tr, '').appendChild(a);
    cell(tr, d.lastReadingTs || '');
    cell(tr, d.latest ? valuesText(d.latest) : '');
    body.appendChild(tr);
  }
  devicesCursor = page.nextCursor || null;
  $('devices-more').hidden = !devicesCursor;
}

// The top partitions by write units per second from the Prometheus text of /metrics.
async function loadHot() {
  const text = await (await api('/metrics')).text();
  const rows = [];
  let low = '';
  for (const line of text.split('\n')) {
    let m = line.match(/^readingsd_partition_write_units_per_second\{partition="((?:[^"\\]|\\.)*)"\} (\S+)/);
    if (m) rows.push([m[1], Number(m[2])]);
    m = line.match(/^readingsd_low_cardinality_partition_key(?:\{\})? (\S+)/);
    if (m) low = Number(m[1]) === 1 ? 'yes' : 'no';
  }
  rows.sort((a, b) => b[1] - a[1]);
  const body = $('hot').tBodies[0];
  body.replaceChildren();
  for (const [partition, wcu] of rows.slice(0, 10)) {
    const tr = document.createElement('tr');
    cell(tr, partition);
    cell(tr, wcu.toFixed(2));
    cell(tr, low);
    body.appendChild(tr);
  }
}

let device = null, readingsCursor = null, chart = null;

const devicePath = (what) => '/v1/devices/' + encodeURIComponent(device) + '/' + what + '?';

function windowQuery() {
  const q = new URLSearchParams();
  q.set('from', new Date($('from').value + 'Z').toISOString());
  q.set('to', new Date($('to').value + 'Z').toISOString());
  return q;
}

function chosenAttributes() {
  return [...$('attrs').querySelectorAll('input:checked')].map((i) => i.value);
}

async function openDevice(id) {
  device = id;
  $('fleet').hidden = true;
  $('device').hidden = false;
  $('device-id').textContent = id;
  clearChart();  // not the last device's chart under this one's name
  $('csv-status').textContent = '';
  // The default window: the hour up to the device's newest reading.
  const latest = (await (await api(devicePath('latest') + 'n=1')).json()).items[0];
  const to = latest ? Date.parse(latest.readingTs) + 1000 : Date.now();
  $('to').value = new Date(to).toISOString().slice(0, 19);
  $('from').value = new Date(to - 3600 * 1000).toISOString().slice(0, 19);
  $('attrs').replaceChildren();
  for (const name of latest ? attributes(latest) : []) {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = name;
    box.checked = typeof latest[name] === 'number';
    label.append(box, ' ' + name + ' ');
    $('attrs').appendChild(label);
  }
  await showWindow();
}

async function showWindow() {
  readingsCursor = null;
  $('readings').tBodies[0].replaceChildren();
  await Promise.all([drawChart(), loadReadings()]);
}

// Windows up to an hour are drawn from the raw readings (the first 1000); longer ones from the
// /aggregate averages in at most 300 buckets, so a chart of a month reads 300 points, not
// every reading. #chart's data-source says which was drawn. Both are asked for as
// format=columns, one array per series: the smaller answer, and already what a chart draws.
const RAW_WINDOW_MS = 3600 * 1000, MAX_BUCKETS = 300;

function clearChart() {
  if (chart) chart.destroy();
  chart = null;
  delete $('chart').dataset.source;
}

async function drawChart() {
  clearChart();
  const names = chosenAttributes();
  if (!names.length) return;
  const q = windowQuery();
  q.set('attributes', names.join(','));
  q.set('format', 'columns');
  const span = Date.parse(q.get('to')) - Date.parse(q.get('from'));
  const raw = span <= RAW_WINDOW_MS;
  let times, series;
  if (raw) {
    q.set('limit', '1000');
    const page = await (await api(devicePath('readings') + q)).json();
    times = page.readingTs;
    series = names.map((n) => numbers(page.columns[n], times.length));
  } else {
    q.set('step', Math.ceil(span / MAX_BUCKETS / 1000) + 's');
    q.set('fn', 'avg');
    const agg = await (await api(devicePath('aggregate') + q)).json();
    times = agg.start;
    series = names.map((n) => numbers(agg.columns[n] && agg.columns[n].avg, times.length));
  }
  const data = times.map((t, i) => [new Date(t), ...series.map((values) => values[i])]);
  if (chart) chart.destroy();  // a draw that was still waiting when this one began
  chart = data.length ? new Dygraph($('chart'), data, { labels: ['time', ...names] }) : null;
  $('chart').dataset.source = raw ? 'readings' : 'aggregate';
  $('chart').dataset.points = data.length;
}

// Where a CSV's header line ends: at the first CRLF outside quotes (a name may hold one).
function headerLength(csv) {
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    if (csv[i] === '"') quoted = !quoted;
    else if (!quoted && csv.startsWith('\r\n', i)) return i + 2;
  }
  return csv.length;
}

// The window's chosen attributes as one CSV file: every page (format=csv, following
// X-Next-Cursor), the header line of the first only. The columns are named (attributes=), so
// every page has the same header, as many bytes long as the first's. Pages are kept as Blobs,
// which the browser may hold outside the script's memory (on disk when large); only the first
// page is read as text, to find where its header ends.
let csvUrl = null;
async function downloadCsv() {
  const names = chosenAttributes();
  if (!names.length) throw new Error('choose the attributes to download');
  const q = windowQuery();
  q.set('format', 'csv');
  q.set('attributes', names.join(','));
  const parts = [];
  let rows = 0, cursor = null, headerBytes = 0;
  do {
    if (cursor) q.set('cursor', cursor);
    const res = await api(devicePath('readings') + q);
    const page = await res.blob();
    if (!parts.length) {
      const text = await page.text();
      headerBytes = new TextEncoder().encode(text.slice(0, headerLength(text))).length;
    }
    parts.push(parts.length ? page.slice(headerBytes) : page);
    rows += Number(res.headers.get('X-Count'));
    $('csv-status').textContent = rows + ' readings…';
    cursor = res.headers.get('X-Next-Cursor');
  } while (cursor);
  if (csvUrl) URL.revokeObjectURL(csvUrl);  // the previous file's: by now it has been saved
  csvUrl = URL.createObjectURL(new Blob(parts, { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = csvUrl;
  a.download = device + '.csv';
  a.click();
  $('csv-status').textContent = rows + ' readings saved';
}

async function loadReadings() {
  const q = windowQuery();
  q.set('limit', '20');
  q.set('format', 'columns');
  if (readingsCursor) q.set('cursor', readingsCursor);
  const page = await (await api(devicePath('readings') + q)).json();
  const body = $('readings').tBodies[0];
  body.replaceChildren();
  page.readingTs.forEach((ts, i) => {
    const tr = document.createElement('tr');
    cell(tr, ts);
    cell(tr, rowText(page, i));
    body.appendChild(tr);
  });
  readingsCursor = page.nextCursor || null;
  $('readings-more').hidden = !readingsCursor;
}

function route() {
  $('error').hidden = true;
  const m = location.hash.match(/^#device=(.+)$/);
  if (m) return openDevice(decodeURIComponent(m[1])).catch(showError);
  $('device').hidden = true;
  $('fleet').hidden = false;
  return Promise.all([loadDevices(false), loadHot()]).catch(showError);
}

$('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem('readingsd-token', $('token').value);
  $('token-form').hidden = true;
  route();
});
$('search').addEventListener('submit', (e) => { e.preventDefault(); loadDevices(false).catch(showError); });
$('devices-more').addEventListener('click', () => loadDevices(true).catch(showError));
$('window').addEventListener('submit', (e) => { e.preventDefault(); showWindow().catch(showError); });
$('readings-more').addEventListener('click', () => loadReadings().catch(showError));
$('csv').addEventListener('click', () => downloadCsv().catch(showError));
window.addEventListener('hashchange', route);
route();
