// A line diff of two texts as the chat page shows it (unified: hunks of removed, added and
// context lines). The controller computes it with jsdiff (`diff`'s structuredPatch); the page
// only draws its lines.

import { structuredPatch, type StructuredPatch } from 'diff';

export interface DiffLine {
  /** `hunk` is a `@@ -a,b +c,d @@` header; the others are one line of a text. */
  kind: 'context' | 'add' | 'remove' | 'hunk';
  text: string;
}

/** A file's change, as the page shows it. */
export interface FileDiff {
  path: string;
  /** The file did not exist before. */
  created: boolean;
  lines: DiffLine[];
  added: number;
  removed: number;
  /** Only the edit's old and new text (an `edit_file` call), not the whole file: no line numbers. */
  partial?: boolean;
}

/**
 * Texts further apart than this many added and removed lines are shown as their common start and
 * end around all of the rest removed then added (`replaceMiddle`): jsdiff's Myers diff takes time
 * quadratic in the distance (about 0.3 s at 1000 on a 50,000-line file, over 2 minutes for two
 * different 20,000-line files), on the extension host.
 */
const MAX_EDIT_LENGTH = 1000;

/** The text with a final newline, so that a missing one at the end is no change (and no `\ No newline` line). */
const terminated = (text: string): string => (text === '' || text.endsWith('\n') ? text : `${text}\n`);

/** A terminated text's lines. */
const linesOf = (text: string): string[] => (text === '' ? [] : text.slice(0, -1).split('\n'));

/** The hunk of texts too far apart to diff: their common first and last lines, the lines between all removed then added. */
function replaceMiddle(oldText: string, newText: string, context: number): StructuredPatch['hunks'] {
  const a = linesOf(oldText);
  const b = linesOf(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0; // the common last lines
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const before = a.slice(Math.max(0, start - context), start).map((l) => ` ${l}`);
  const after = a.slice(a.length - end, a.length - end + context).map((l) => ` ${l}`);
  const removed = a.slice(start, a.length - end).map((l) => `-${l}`);
  const added = b.slice(start, b.length - end).map((l) => `+${l}`);
  const first = start - before.length + 1;
  return [{
    oldStart: first,
    oldLines: before.length + removed.length + after.length,
    newStart: first,
    newLines: before.length + added.length + after.length,
    lines: [...before, ...removed, ...added, ...after],
  }];
}

const KINDS: Record<string, DiffLine['kind'] | undefined> = { ' ': 'context', '+': 'add', '-': 'remove' };

/**
 * The unified diff of `oldText` (`null`: a new file) and `newText`, with `context` unchanged
 * lines around each change; `partial`: the texts are pieces of the file (no hunk headers).
 */
export function fileDiff(path: string, oldText: string | null, newText: string, options: { context?: number; partial?: boolean } = {}): FileDiff {
  const context = options.context ?? 3;
  const a = terminated(oldText ?? '');
  const b = terminated(newText);
  const patch = structuredPatch(path, path, a, b, undefined, undefined, { context, maxEditLength: MAX_EDIT_LENGTH });
  const lines: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  for (const hunk of patch?.hunks ?? replaceMiddle(a, b, context)) {
    if (!options.partial) {
      // An empty side starts at the line before it, as in `diff -u` (and jsdiff's formatPatch).
      const oldStart = hunk.oldLines ? hunk.oldStart : hunk.oldStart - 1;
      const newStart = hunk.newLines ? hunk.newStart : hunk.newStart - 1;
      lines.push({ kind: 'hunk', text: `@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@` });
    }
    for (const line of hunk.lines) {
      const kind = KINDS[line[0]];
      if (!kind) continue; // `\ No newline at end of file`: the texts are terminated above, so none
      lines.push({ kind, text: line.slice(1) });
      if (kind === 'add') added++;
      if (kind === 'remove') removed++;
    }
  }
  return { path, created: oldText === null, lines, added, removed, ...(options.partial ? { partial: true } : {}) };
}
