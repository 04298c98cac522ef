// The chat's and the editor's reading of genai's commands (src/chat/commands.ts), without a
// daemon: `/NAME words` and `//text`, the model of a chat choice, a reply's first code block and
// where it goes for `apply: replace` and `insert_below`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choiceModel, commandWords, firstCodeBlock, placeCode, readSlash } from '../src/chat/commands';
import type { CommandInfo } from '../src/protocol';

const translate: CommandInfo = {
  name: 'translate',
  title: 'translate',
  description: 'Translate',
  source: 'project',
  arguments: [{ name: 'lang', default: 'French' }, { name: 'style' }],
  apply: 'show',
};

test('readSlash: /NAME and its words, //text as /text, other text as it is', () => {
  assert.deepEqual(readSlash('/translate lang=German Good\nnight'), { command: { name: 'translate', rest: 'lang=German Good\nnight' } });
  assert.deepEqual(readSlash('/git:commit'), { command: { name: 'git:commit', rest: '' } });
  assert.deepEqual(readSlash('//translate this'), { text: '/translate this' });
  assert.deepEqual(readSlash('hello /translate'), { text: 'hello /translate' });
  assert.deepEqual(readSlash('/ alone'), { text: '/ alone' });
});

test('commandWords: leading declared key=value words are arguments, the rest is text as typed', () => {
  assert.deepEqual(commandWords(translate, 'lang=German style=terse Good  night\nall'), {
    arguments: { lang: 'German', style: 'terse' },
    text: 'Good  night\nall',
  });
  assert.deepEqual(commandWords(translate, 'colour=red lang=German hi'), { arguments: {}, text: 'colour=red lang=German hi' });
  assert.deepEqual(commandWords(translate, 'hi lang=German'), { arguments: {}, text: 'hi lang=German' });
  assert.deepEqual(commandWords(translate, 'lang=German'), { arguments: { lang: 'German' }, text: '' });
  assert.deepEqual(commandWords({ ...translate, arguments: [] }, 'a=b c'), { arguments: {}, text: 'a=b c' });
});

test('choiceModel: PROVIDER:MODEL for a model id or a configuration\'s model, else the provider', () => {
  assert.equal(choiceModel({ feature: 'assistant', serviceProvider: 'fast' }), 'fast');
  assert.equal(choiceModel({ feature: 'assistant', serviceProvider: 'ollama', model: 'llama3:8b' }), 'ollama:llama3:8b');
  assert.equal(
    choiceModel({ feature: 'assistant', serviceProvider: 'openai', modelConfiguration: 'mini' }, [{ name: 'mini', format: 'openai', model: 'gpt-4o-mini' }]),
    'openai:gpt-4o-mini',
  );
});

test('firstCodeBlock: the first fenced block, a longer closing fence, an unclosed one, none', () => {
  assert.equal(firstCodeBlock('Here:\n\n```ts\nconst a = 1;\n\nconst b = 2;\n```\n\n```\nsecond\n```'), 'const a = 1;\n\nconst b = 2;');
  assert.equal(firstCodeBlock('````md\n```\ninner\n```\n`````\n'), '```\ninner\n```');
  assert.equal(firstCodeBlock('~~~\ntilde\n~~~'), 'tilde');
  assert.equal(firstCodeBlock('```\nunclosed\nto the end'), 'unclosed\nto the end');
  assert.equal(firstCodeBlock('no `code` block here'), undefined);
});

test('placeCode: replace takes the selection\'s place; insert_below goes on the line after it', () => {
  const text = 'one\ntwo\nthree';
  const put = (start: number, end: number, code: string, apply: 'replace' | 'insert_below') => {
    const p = placeCode(text, start, end, code, apply);
    return text.slice(0, p.from) + p.text + text.slice(p.to);
  };
  // Part of a line.
  assert.equal(put(4, 7, 'TWO', 'replace'), 'one\nTWO\nthree');
  assert.equal(put(4, 7, 'new', 'insert_below'), 'one\ntwo\nnew\nthree');
  // Whole lines (the selection ends with the newline).
  assert.equal(put(0, 8, 'ONE\nTWO\n', 'replace'), 'ONE\nTWO\nthree');
  assert.equal(put(0, 4, 'new', 'insert_below'), 'one\nnew\ntwo\nthree');
  // The last line, without a newline at the end.
  assert.equal(put(8, 13, 'new', 'insert_below'), 'one\ntwo\nthree\nnew');
});
