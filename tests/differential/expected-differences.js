// Every difference between readingsd and dynalite that differential.js may find, by case name
// (cases.js), with the reason. A difference not listed here fails the test, and so does an entry
// whose case no longer differs: the list stays the truth. README (DynamoDB-compatible API) says
// the same in prose.
//
// Three kinds of entry, by the first word of the reason:
//   design:   readingsd is right and means to stay so (it normalises timestamps in keys).
//   dynalite: readingsd answers as DynamoDB does and dynalite does not.
//   gap:      readingsd is not yet what DynamoDB is; issue #22 names the work. Remove the entry
//             with the change that closes it (the test then insists).
'use strict';

const NORMALISED = 'design: readingsd normalises a timestamp in a key (any accepted form, any zone) to ' +
  'its 30-byte UTC sort key before comparing, so every form of one instant finds the same reading; ' +
  'dynalite compares the raw strings';
const SYNTAX = 'dynalite: readingsd words a syntax error as DynamoDB does (Syntax error; token: "…", ' +
  'near: "…"); dynalite reports its own parser\'s expectation';
const SCAN_ORDER = 'design: a Scan page is the first items in the implementation\'s own order (readingsd: ' +
  'device ids bytewise; DynamoDB and dynalite: a hash of the partition key), so a page that stops early holds ' +
  'other items; the union of all pages is the table on both (the other scan cases)';
const KEY_PREFIX = 'dynalite: DynamoDB puts "Invalid KeyConditionExpression: " before this message (as its ' +
  'answers quoted in AWS\'s forums and SDK issues show); dynalite leaves it out';
const START_KEY = 'dynalite: DynamoDB says "The provided starting key is invalid: The provided key element does ' +
  'not match the schema"; dynalite stops after "invalid"';

module.exports = {
  'query bound in seconds without a fraction': NORMALISED,
  'query bound with a zone offset': NORMALISED,
  'get sort key not normalised': NORMALISED,

  'query filter syntax error': SYNTAX,
  'query key condition syntax error': SYNTAX,
  'query projection with Select COUNT': 'dynalite: "If you use the ProjectionExpression parameter, then the ' +
    'value for Select can only be SPECIFIC_ATTRIBUTES" (DynamoDB\'s reference); readingsd refuses COUNT beside it, ' +
    'dynalite ignores the projection',
  'query select SPECIFIC_ATTRIBUTES without a projection': 'dynalite: SPECIFIC_ATTRIBUTES returns "only the ' +
    'attributes listed in ProjectionExpression" (DynamoDB\'s reference); without one readingsd refuses the ' +
    'request, dynalite returns whole items',
  'query projection with Select ALL_ATTRIBUTES': 'dynalite: "If you use the ProjectionExpression parameter, ' +
    'then the value for Select can only be SPECIFIC_ATTRIBUTES" (DynamoDB\'s reference); readingsd refuses ' +
    'ALL_ATTRIBUTES beside it, dynalite projects',
  'query select ALL_PROJECTED_ATTRIBUTES without an index': 'dynalite: ALL_PROJECTED_ATTRIBUTES is for a ' +
    'query of an index (DynamoDB refuses it otherwise), so readingsd, which has no indexes, refuses it; dynalite ' +
    'returns whole items',

  'scan first page limit 10': SCAN_ORDER,
  // Segment 0 without TotalSegments is the whole table on both (DynamoDB requires TotalSegments
  // only beside a Segment above 0); its first 1 MB page differs by order.
  'scan segment without total segments': SCAN_ORDER,

  'batch get 101 keys': 'design: DynamoDB echoes all 101 keys inside the message; readingsd writes "[…]" in ' +
    'their place and keeps the rest of DynamoDB\'s message',

  'query consumed capacity TOTAL on nothing': 'dynalite: DynamoDB bills a read that finds nothing at least ' +
    'one read unit (0.5 eventually consistent); dynalite reports 0',

  'query legacy QueryFilter ConditionalOperator OR': 'dynalite: its legacy OR selects 9 readings where the same ' +
    'filter as an expression (case "query filter the legacy OR as an expression") selects 14 on both; readingsd ' +
    'selects the 14 either way',

  'query exclusive start key outside the key condition': 'dynalite: DynamoDB words it "The provided starting key ' +
    'is outside query boundaries based on provided conditions" (issue #22, from DynamoDB); dynalite\'s message ' +
    'is older',

  'query empty partition key': 'dynalite: DynamoDB refuses an empty string as a key value ("The AttributeValue ' +
    'for a key attribute cannot contain an empty string value"); dynalite answers an empty page',
  'get empty sort key': 'dynalite: DynamoDB\'s current wording is "One or more parameter values are not valid. ' +
    'The AttributeValue for a key attribute cannot contain an empty string value"; dynalite\'s is older',

  'query two conditions on the sort key': KEY_PREFIX,
  'query OR in the key condition': KEY_PREFIX,
  'query exclusive start key missing the sort key': START_KEY,
  'query exclusive start key with another attribute': START_KEY,
};
