// The page's clip counts as the core's `hark_core::text::clip` does:
// the same cases as its tests, and what UTF-16 counting got wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clip, repliedBy } from '../src/text.js';

test('keeps the first characters and marks the cut, as the core does', () => {
  assert.equal(clip('héllo wörld', 5), 'héllo…');
  assert.equal(clip('short', 5), 'short');
  assert.equal(clip('', 5), '');
  assert.equal(clip('abc', 0), '…');
});

test('counts characters, not UTF-16 units', () => {
  // Each emoji is one character but two UTF-16 units.
  assert.equal(clip('😀😀😀', 3), '😀😀😀');
  assert.equal(clip('😀😀😀😀', 3), '😀😀😀…');
  assert.equal(clip('a😀b', 2), 'a😀…');
});

test('a reply from the phone reads "answered on phone (its name)", as the core says it', () => {
  const item = (outcome, by, extra = {}) => /** @type {any} */ ({ outcome: { outcome }, replied_by: by, replied_device: null, ...extra });
  assert.equal(repliedBy(item('answered', 'web', { replied_device: { id: 'd1', name: 'Pixel 8' } })), 'answered on phone (Pixel 8)');
  assert.equal(repliedBy(item('skipped', 'web', { replied_device: { id: 'd1', name: null } })), 'skipped on phone (device d1)');
  assert.equal(repliedBy(item('approved', 'push')), 'allowed on phone (from its notification)');
  assert.equal(repliedBy(item('denied', 'desktop')), 'denied by desktop');
  assert.equal(repliedBy(item('answered', 'hub', { replied_remote: { operator: 'alice', host: 'devbox' } })), 'answered by alice on devbox');
  assert.equal(repliedBy(item('timed_out', null)), null);
});
