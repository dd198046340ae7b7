// Numbers with units read from a question and placed on an operator's or a solver's inputs by dimension.
import { describe, expect, it } from 'vitest';
import { placeQuantities, readQuantities } from '../../src/llm/quantities.js';

describe('readQuantities', () => {
  it('reads numbers with units, compound and prefixed, in SI; numbers without a unit are left out', () => {
    const q = readQuantities('kinetic energy of a 2 kg mass at 36 km/h, 3 apples, KO42, a 60 cm tube at 20 °C and 9.81 m/s^2, 1500 g, 2 kN');
    expect(q.map((x) => [x.text, Number(x.si.toPrecision(12))])).toEqual([
      ['2 kg', 2],
      ['36 km/h', 10],
      ['60 cm', 0.6],
      ['20 °C', 293.15],
      ['9.81 m/s^2', 9.81],
      ['1500 g', 1.5],
      ['2 kN', 2000],
    ]);
  });

  it('reads unit words and superscript powers', () => {
    expect(readQuantities('a rod 2 meters long, 3 seconds, 5 m²/s').map((x) => x.si)).toEqual([2, 3, 5]);
  });

  it('a word that names an Object.prototype member is no unit', () => {
    expect(readQuantities('5 constructor, 3 toString, 2 valueOf/s and 4 kg')).toMatchObject([{ text: '4 kg', si: 4 }]);
  });
});

describe('placeQuantities', () => {
  const kinetic = [
    { key: 'mass_kg', unit: 'kg', default: 1 },
    { key: 'velocity_m_s', unit: 'm/s', default: 1 },
  ];

  it('places each quantity on the input of its dimension, converted into the input unit, whatever the order', () => {
    const placed = placeQuantities(readQuantities('at 36 km/h, a 1500 g ball'), kinetic);
    expect(placed.inputs).toEqual({ velocity_m_s: 10, mass_kg: 1.5 });
    expect(placed.placed.map((p) => p.from)).toEqual(['36 km/h', '1500 g']);
    expect(placed.unplaced).toEqual([]);
  });

  it('two quantities of one dimension fill its inputs in order; one with no input of its dimension is left unplaced', () => {
    const inputs = [
      { key: 'shape', unit: '', default: 'cylinder' },
      { key: 'length_m', unit: 'm', default: 0.5 },
      { key: 'radius_m', unit: 'm', default: 0.01 },
      { key: 'sound_speed_m_s', unit: 'm/s', default: 343 },
    ];
    const placed = placeQuantities(readQuantities('a 60 cm tube of 1 cm radius, 2 kg, 340 m/s'), inputs);
    expect(placed.inputs).toEqual({ length_m: 0.6, radius_m: 0.01, sound_speed_m_s: 340 });
    expect(placed.unplaced).toEqual(['2 kg']);
  });

  it('converts °C into a kelvin input and a length into a millimetre input', () => {
    const placed = placeQuantities(readQuantities('20 °C and 0.5 m'), [
      { key: 'temperature_K', unit: 'K', default: 300 },
      { key: 'gap_mm', unit: 'mm', default: 1 },
    ]);
    expect(placed.inputs).toEqual({ temperature_K: 293.15, gap_mm: 500 });
  });
});
