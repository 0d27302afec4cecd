// How long a parked item has waited, as the modal and the inbox say it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roughly } from '../src/text.js';

test('seconds, then minutes, then hours and minutes', () => {
  assert.equal(roughly(0), '0 s');
  assert.equal(roughly(59_999), '59 s');
  assert.equal(roughly(60_000), '1 min');
  assert.equal(roughly(3 * 60_000 + 20_000), '3 min');
  assert.equal(roughly(60 * 60_000), '1 h');
  assert.equal(roughly(125 * 60_000), '2 h 5 min');
});

test('a clock a little behind never reads negative', () => {
  assert.equal(roughly(-500), '0 s');
});
