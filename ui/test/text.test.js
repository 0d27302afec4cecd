// The page's clip counts as the core's `hark_core::text::clip` does:
// the same cases as its tests, and what UTF-16 counting got wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clip } from '../src/text.js';

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
