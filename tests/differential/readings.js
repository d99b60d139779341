// The readings both implementations hold: deterministic, a few thousand over devices of uneven
// size, with every attribute kind readingsd stores (exact numbers up to 38 digits, strings,
// booleans, attributes present on only some readings).
//
// Each reading exists twice: as the MQTT payload a device would send (timestamps in assorted
// accepted forms, some numbers in exponent form) and as the DynamoDB item readingsd is expected
// to store (readingTs normalised to 30-byte UTC with 9 fraction digits, numbers in DynamoDB's
// plain decimal). dynalite is loaded with the latter, so the comparison is fair.
'use strict';

// Device ids use the whole charset [A-Za-z0-9._:-]; "a1"/"a10" share a prefix.
const DEVICES = [
  { id: 'a1', count: 900 },
  { id: 'a10', count: 700 },
  { id: 'sensor-07', count: 600 },
  { id: 'gw.02:port-3', count: 400 },
  { id: 'X_9', count: 300 },
  { id: 'z', count: 100 },
  // Readings of 2-6 KB (a "pad" string): 1.6 MB in all, so a page ends at DynamoDB's 1 MB of data
  // read before Limit, and reads cost more than one capacity unit each.
  { id: 'pad.big', count: 400, pad: true },
];

// 2026-06-23T00:00:00Z in nanoseconds.
const START_NS = 1782172800000n * 1000000n;

function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pad(n, width) {
  return String(n).padStart(width, '0');
}

// "YYYY-MM-DDTHH:MM:SS" of a UTC instant given in whole seconds.
function civil(seconds) {
  return new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
}

// readingsd's sort key: 30 bytes, UTC, always 9 fraction digits.
function normalisedTs(ns) {
  return `${civil(ns / 1000000000n)}.${pad(ns % 1000000000n, 9)}Z`;
}

// An accepted but not normalised form of the same instant: fraction digits trimmed, or another
// zone.
function publishedTs(ns, form) {
  const seconds = ns / 1000000000n;
  const fraction = pad(ns % 1000000000n, 9).replace(/0+$/, '');
  const dot = fraction ? `.${fraction}` : '';
  switch (form) {
    case 0: return normalisedTs(ns);
    case 1: return `${civil(seconds)}${dot}Z`;
    case 2: return `${civil(seconds + 7200n)}${dot}+02:00`;
    default: return `${civil(seconds - 19800n)}${dot}-05:30`;
  }
}

// A number as {payload text, DynamoDB N text}; most are written plainly in both.
function num(text, payload = text) {
  return { n: text, payload };
}

function tenths(t) {
  const sign = t < 0 ? '-' : '';
  const a = Math.abs(t);
  return `${sign}${Math.floor(a / 10)}${a % 10 ? `.${a % 10}` : ''}`;
}

const ODD_NUMBERS = [
  num('123456789012345678'),
  num('0.1234567890123456789'),
  num('1000000000000000000000', '1e21'),
  num('0.00000015', '1.5e-7'),
  // A fraction beyond 2^53 (as -98765432109876543210.5) is exact here too, but the DocumentClient
  // with default settings throws on it whatever the server: it only makes BigInts of integers.
  num('-98765432109876543210'),
  num('-0.00012345678901234567890123456789012345678'),
  num('12345678901234567890123456789012345678'),
  num('0'),
  num('-0.5'),
];
const STATUSES = ['ok', 'ok', 'ok', 'warn', 'fail', 'Zürich ✓'];
const NOTES = ['maintenance due', 'battery low', 'door forced', 'firmware 2.1'];

function generate() {
  const random = mulberry32(22);
  const readings = [];  // {device, ns, ts, publishedTs, attrs: {name: {kind, value}}}
  DEVICES.forEach((device, d) => {
    let ns = START_NS + BigInt(d) * 7000000000n;
    for (let k = 0; k < device.count; ++k) {
      // The first reading sits on a whole second; later ones on seconds, milliseconds or nanos.
      if (k > 0) {
        const r = random();
        ns += 60000000000n + BigInt(Math.floor(random() * 5)) * 1000000000n;
        if (r < 0.3) ns += BigInt(Math.floor(random() * 1000)) * 1000000n;
        else if (r < 0.5) ns += BigInt(Math.floor(random() * 1000000000));
      }
      const attrs = {};
      attrs.temperature = { kind: 'N', ...num(tenths(Math.floor(random() * 650) - 200)) };
      if (random() < 0.8) attrs.humidity = { kind: 'N', ...num(String(Math.floor(random() * 101))) };
      // A 64-bit energy counter: 20 digits, past JavaScript's safe integers.
      const energy = 10000000000000000000n + BigInt(readings.length) * 1234567890123n + BigInt(k);
      attrs.energy = { kind: 'N', ...num(energy.toString()) };
      if (k % 9 === 4) attrs.odd = { kind: 'N', ...ODD_NUMBERS[(k / 9 | 0) % ODD_NUMBERS.length] };
      attrs.status = { kind: 'S', value: STATUSES[Math.floor(random() * STATUSES.length)] };
      attrs.door = { kind: 'BOOL', value: random() < 0.25 };
      if (random() < 0.1) attrs.note = { kind: 'S', value: NOTES[Math.floor(random() * NOTES.length)] };
      attrs.label = { kind: 'S', value: pad(k % 120, 4) };  // a string that reads like a number
      if (k % 17 === 3) attrs['a.b'] = { kind: 'S', value: 'dotted name' };
      if (device.pad) attrs.pad = { kind: 'S', value: 'abcdefghijklmnopqrstuvwxyz'.repeat(300).slice(0, 2000 + ((k * 997) % 4000)) };
      readings.push({
        device: device.id,
        ns,
        ts: normalisedTs(ns),
        publishedTs: publishedTs(ns, k % 4),
        attrs,
      });
    }
  });
  return readings;
}

// The DynamoDB item readingsd should answer for a reading.
function item(reading) {
  const out = { deviceId: { S: reading.device }, readingTs: { S: reading.ts } };
  for (const [name, a] of Object.entries(reading.attrs)) {
    out[name] = a.kind === 'N' ? { N: a.n } : { [a.kind]: a.value };
  }
  return out;
}

// The JSON of one reading in an MQTT payload, numbers written out as their payload text.
function payloadJson(reading) {
  const parts = [`"deviceId":${JSON.stringify(reading.device)}`, `"readingTs":${JSON.stringify(reading.publishedTs)}`];
  for (const [name, a] of Object.entries(reading.attrs)) {
    const value = a.kind === 'N' ? a.payload : JSON.stringify(a.value);
    parts.push(`${JSON.stringify(name)}:${value}`);
  }
  return `{${parts.join(',')}}`;
}

// Messages of one device's readings each, at most `batch` readings and about `bytes` long (the
// daemon takes up to 1000 readings and 256 KiB): {device, payload}.
function messages(readings, batch = 250, bytes = 200000) {
  const out = [];
  for (const device of DEVICES) {
    let parts = [], size = 0;
    const flush = () => {
      if (parts.length) out.push({ device: device.id, payload: `[${parts.join(',')}]` });
      parts = [];
      size = 0;
    };
    for (const r of readings.filter((x) => x.device === device.id)) {
      const json = payloadJson(r);
      if (parts.length === batch || size + json.length > bytes) flush();
      parts.push(json);
      size += json.length + 1;
    }
    flush();
  }
  return out;
}

module.exports = { DEVICES, generate, item, messages, normalisedTs };
