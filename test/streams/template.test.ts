import { describe, expect, it } from 'vitest';
import { renderTemplate, RENDERED_MAX } from '../../src/streams/template.js';

const envelope = { value: 1.5, unit: 'K', svcond: 42, cko: { svcond: 42, operatorChain: ['KO42'] }, outputs: { xs: [1, 2, 3] }, stream: { tick: 3 } };

describe('stream templates: {{placeholder}} substitution only', () => {
  it('substitutes dotted paths, arrays as JSON, missing as empty', () => {
    expect(renderTemplate('T={{value}} {{ unit }} at {{cko.svcond}}; {{outputs.xs}} {{outputs.xs.1}} [{{nope.deeper}}] #{{stream.tick}}', envelope)).toBe(
      'T=1.5 K at 42; [1,2,3] 2 [] #3',
    );
  });

  it('runs no code and reaches no prototype, whatever the template says', () => {
    const hostile = [
      "{{constructor.constructor('return process')().exit(1)}}",
      '{{constructor.constructor}}',
      '{{__proto__}}',
      '{{__proto__.polluted}}',
      '{{toString}}',
      '{{value.constructor.name}}',
      '${process.exit(1)}',
      '<%= process.exit(1) %>',
      '{{#each x}}{{/each}}',
      '{{value}}}}{{{{value}}',
      '{{' + 'a.'.repeat(40) + 'b}}',
      '<script>alert(1)</script>{{unit}}',
    ];
    const out = hostile.map((t) => renderTemplate(t, envelope));
    expect(out[0]).toBe(hostile[0]);
    expect(out[1]).toBe('');
    expect(out[2]).toBe('');
    expect(out[3]).toBe('');
    expect(out[4]).toBe('');
    expect(out[5]).toBe('');
    expect(out[6]).toBe('${process.exit(1)}');
    expect(out[7]).toBe('<%= process.exit(1) %>');
    expect(out[8]).toBe('{{#each x}}{{/each}}');
    expect(out[9]).toBe('1.5}}{{1.5');
    expect(out[10]).toBe(hostile[10]);
    expect(out[11]).toBe('<script>alert(1)</script>K');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('bounds the output', () => {
    const big = { xs: Array.from({ length: 20_000 }, (_, i) => i) };
    expect(renderTemplate('{{xs}}{{xs}}{{xs}}', big).length).toBe(RENDERED_MAX);
  });
});
