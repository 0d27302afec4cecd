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

test('names a sub-agent as the core does, by run or else by session', async () => {
  const { subAgentLabel } = await import('../src/text.js');
  const asker = { sub_agent: { id: 'a1', kind: 'general-purpose' } };
  const item = /** @type {any} */ ({ asker, run_id: '1a2b3c4d-0000-0000-0000-000000000000', session_id: 's' });
  assert.equal(subAgentLabel(item), 'sub-agent general-purpose of run 1a2b3c4d');
  assert.equal(subAgentLabel({ ...item, run_id: null }), 'sub-agent general-purpose of session s');
  assert.equal(subAgentLabel({ ...item, asker: {} }), null);
});
