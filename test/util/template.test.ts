// {{placeholder}} templates: looked up, never evaluated; own properties only.
import { describe, expect, it } from 'vitest';
import { fill, placeholders } from '../../src/util/template.js';

describe('templates', () => {
  const ctx = { state: { m: 2, name: 'x' }, result: { value: 4.5, unit: 'J' }, tick: 3 };

  it('a whole placeholder keeps its type; inside text it is substituted as text; missing is null or empty', () => {
    expect(fill({ a: '{{state.m}}', b: 'tick {{tick}} of {{state.name}}', c: ['{{result.value}}', 7], d: '{{state.nope}}', e: 'x{{nope}}y' }, ctx)).toEqual({
      a: 2,
      b: 'tick 3 of x',
      c: [4.5, 7],
      d: null,
      e: 'xy',
    });
  });

  it('nothing is evaluated and nothing but own properties is read', () => {
    expect(fill('{{state.m + 1}}', ctx)).toBe('{{state.m + 1}}');
    expect(fill('{{constructor}}', ctx)).toBeNull();
    expect(fill('{{state.__proto__}}', ctx)).toBeNull();
    expect(fill('{{tick.toString}}', ctx)).toBeNull();
    expect(placeholders({ a: '{{state.m}} and {{tick}}', b: ['{{result.unit}}'] })).toEqual(['state.m', 'tick', 'result.unit']);
  });
});
