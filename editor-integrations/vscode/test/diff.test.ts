// fileDiff (src/chat/diff.ts, jsdiff's structuredPatch underneath): the unified hunks the chat page
// shows for a file edit: 3 lines of context, `@@ -a,b +c,d @@` headers, added/removed counts,
// `created` for a new file, `partial` (an edit_file's old and new text: no headers), and texts too
// far apart for jsdiff shown as their common ends around the rest removed then added.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileDiff, type DiffLine } from '../src/chat/diff';

const numbered = (n: number, name = 'line'): string[] => Array.from({ length: n }, (_, i) => `${name} ${i + 1}`);
const hunk = (text: string): DiffLine => ({ kind: 'hunk', text });
const ctx = (...texts: string[]): DiffLine[] => texts.map((text) => ({ kind: 'context', text }));
const add = (...texts: string[]): DiffLine[] => texts.map((text) => ({ kind: 'add', text }));
const del = (...texts: string[]): DiffLine[] => texts.map((text) => ({ kind: 'remove', text }));

test('a typical edit: hunks with 3 lines of context, changes up to 6 lines apart in one hunk', () => {
  const old = numbered(20);
  const edited = [...old];
  edited.splice(16, 1, 'line 17', 'line 17b');
  edited.splice(9, 1);
  edited[2] = 'line three';
  const diff = fileDiff('src/a.ts', `${old.join('\n')}\n`, `${edited.join('\n')}\n`);
  assert.deepEqual(diff, {
    path: 'src/a.ts',
    created: false,
    lines: [
      hunk('@@ -1,13 +1,12 @@'),
      ...ctx('line 1', 'line 2'),
      ...del('line 3'),
      ...add('line three'),
      ...ctx('line 4', 'line 5', 'line 6', 'line 7', 'line 8', 'line 9'),
      ...del('line 10'),
      ...ctx('line 11', 'line 12', 'line 13'),
      hunk('@@ -15,6 +14,7 @@'),
      ...ctx('line 15', 'line 16', 'line 17'),
      ...add('line 17b'),
      ...ctx('line 18', 'line 19', 'line 20'),
    ],
    added: 2,
    removed: 2,
  });
});

test('a new file is all added from line 0; a file emptied is all removed', () => {
  assert.deepEqual(fileDiff('new.md', null, '# Title\n\nText'), {
    path: 'new.md',
    created: true,
    lines: [hunk('@@ -0,0 +1,3 @@'), ...add('# Title', '', 'Text')],
    added: 3,
    removed: 0,
  });
  assert.deepEqual(fileDiff('gone.txt', 'x\ny\n', ''), {
    path: 'gone.txt',
    created: false,
    lines: [hunk('@@ -1,2 +0,0 @@'), ...del('x', 'y')],
    added: 0,
    removed: 2,
  });
});

test('an unchanged file has no lines (a missing final newline is no change)', () => {
  assert.deepEqual(fileDiff('same.txt', 'a\nb\n', 'a\nb\n'), { path: 'same.txt', created: false, lines: [], added: 0, removed: 0 });
  assert.deepEqual(fileDiff('same.txt', 'a\nb\n', 'a\nb'), { path: 'same.txt', created: false, lines: [], added: 0, removed: 0 });
  assert.deepEqual(fileDiff('empty.txt', '', ''), { path: 'empty.txt', created: false, lines: [], added: 0, removed: 0 });
});

test('partial: an edit_file call\'s old and new text, without hunk headers', () => {
  assert.deepEqual(fileDiff('a.rs', 'fn b() {}', 'fn b() {\n    1\n}', { partial: true }), {
    path: 'a.rs',
    created: false,
    lines: [...del('fn b() {}'), ...add('fn b() {', '    1', '}')],
    added: 3,
    removed: 1,
    partial: true,
  });
});

test('texts too far apart for jsdiff: the common start and end around the rest removed then added, quickly', () => {
  const start = numbered(1000, 'same');
  const end = numbered(1000, 'tail');
  const old = [...start, ...numbered(3000, 'old'), ...end];
  const edited = [...start, ...numbered(4000, 'new'), ...end];
  const began = Date.now();
  const diff = fileDiff('big.txt', `${old.join('\n')}\n`, `${edited.join('\n')}\n`);
  assert.ok(Date.now() - began < 5000, `took ${Date.now() - began} ms`);
  assert.equal(diff.added, 4000);
  assert.equal(diff.removed, 3000);
  assert.deepEqual(diff.lines.slice(0, 5), [hunk('@@ -998,3006 +998,4006 @@'), ...ctx('same 998', 'same 999', 'same 1000'), ...del('old 1')]);
  assert.deepEqual(diff.lines.slice(3003, 3005), [...del('old 3000'), ...add('new 1')]);
  assert.deepEqual(diff.lines.slice(-4), [...add('new 4000'), ...ctx('tail 1', 'tail 2', 'tail 3')]);
  assert.equal(diff.lines.length, 1 + 3 + 3000 + 4000 + 3);
  // A big insertion into a big file stays one hunk of added lines.
  const inserted = fileDiff('big.txt', `${old.join('\n')}\n`, `${[...old.slice(0, 2500), ...numbered(2000, 'more'), ...old.slice(2500)].join('\n')}\n`);
  assert.equal(inserted.added, 2000);
  assert.equal(inserted.removed, 0);
  assert.equal(inserted.lines[0].text, '@@ -2498,6 +2498,2006 @@');
});
