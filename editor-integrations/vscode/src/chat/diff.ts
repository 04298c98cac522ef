// A line diff of two texts as the chat page shows it (unified: hunks of removed, added and
// context lines). Plain TypeScript: the controller computes it, the page only draws its lines.

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

/** Above this many cells the middle is shown as all removed then all added (no LCS table). */
const MAX_CELLS = 4_000_000;

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

type Op = { kind: 'context' | 'add' | 'remove'; text: string; a: number; b: number };

/** The edit script from `a` to `b` (common prefix and suffix first, an LCS table in between). */
function editScript(a: string[], b: string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: Op[] = [];
  for (let i = 0; i < start; i++) ops.push({ kind: 'context', text: a[i], a: i, b: i });
  const n = endA - start;
  const m = endB - start;
  if (n * m > MAX_CELLS) {
    for (let i = start; i < endA; i++) ops.push({ kind: 'remove', text: a[i], a: i, b: start });
    for (let j = start; j < endB; j++) ops.push({ kind: 'add', text: b[j], a: endA, b: j });
  } else {
    // lcs[i][j]: the longest common subsequence of a[start+i..endA] and b[start+j..endB].
    const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = a[start + i] === b[start + j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[start + i] === b[start + j]) {
        ops.push({ kind: 'context', text: a[start + i], a: start + i, b: start + j });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        // Removals before additions, as unified diffs show them.
        ops.push({ kind: 'remove', text: a[start + i], a: start + i, b: start + j });
        i++;
      } else {
        ops.push({ kind: 'add', text: b[start + j], a: start + i, b: start + j });
        j++;
      }
    }
  }
  for (let k = 0; endA + k < a.length; k++) ops.push({ kind: 'context', text: a[endA + k], a: endA + k, b: endB + k });
  return ops;
}

/**
 * The unified diff of `oldText` (`null`: a new file) and `newText`, with `context` unchanged
 * lines around each change; `partial`: the texts are pieces of the file (no hunk headers).
 */
export function fileDiff(path: string, oldText: string | null, newText: string, options: { context?: number; partial?: boolean } = {}): FileDiff {
  const context = options.context ?? 3;
  const ops = editScript(splitLines(oldText ?? ''), splitLines(newText));
  const lines: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  const changed = ops.map((op, i) => (op.kind !== 'context' ? i : -1)).filter((i) => i >= 0);
  let k = 0;
  while (k < changed.length) {
    // A hunk: the changes less than 2*context+1 lines apart, with context around them.
    const first = changed[k];
    let last = first;
    while (k + 1 < changed.length && changed[k + 1] - last <= 2 * context + 1) last = changed[++k];
    k++;
    const from = Math.max(0, first - context);
    const to = Math.min(ops.length - 1, last + context);
    const hunk = ops.slice(from, to + 1);
    const oldCount = hunk.filter((o) => o.kind !== 'add').length;
    const newCount = hunk.filter((o) => o.kind !== 'remove').length;
    const oldStart = oldCount ? hunk.find((o) => o.kind !== 'add')!.a + 1 : hunk[0].a;
    const newStart = newCount ? hunk.find((o) => o.kind !== 'remove')!.b + 1 : hunk[0].b;
    if (!options.partial) lines.push({ kind: 'hunk', text: `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@` });
    for (const o of hunk) {
      lines.push({ kind: o.kind, text: o.text });
      if (o.kind === 'add') added++;
      if (o.kind === 'remove') removed++;
    }
  }
  return { path, created: oldText === null, lines, added, removed, ...(options.partial ? { partial: true } : {}) };
}
