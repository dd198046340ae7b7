// Numbers with units read from a question ("a 2 kg mass at 3 m/s", "a 60 cm tube", "20 °C") and placed on the inputs
// of an operator or a solver by dimension: a quantity goes to the first input, in the input list's order, whose unit
// has the same dimension (the kernel's parseUnit), converted into that input's unit. Pure: the offline assistant
// (offline.ts) says what it placed where, and what it could not place.
import { parseUnit, type Dimension } from '../kernel/operators/reference.js';

/** A unit as written → the SI unit of the kernel it scales (a name parseUnit knows), the factor, and an offset. */
interface Scale {
  si: string;
  factor: number;
  offset?: number;
}

const PREFIXED: Readonly<Record<string, Scale>> = {
  m: { si: 'm', factor: 1 },
  km: { si: 'm', factor: 1e3 },
  cm: { si: 'm', factor: 1e-2 },
  mm: { si: 'm', factor: 1e-3 },
  um: { si: 'm', factor: 1e-6 },
  µm: { si: 'm', factor: 1e-6 },
  nm: { si: 'm', factor: 1e-9 },
  kg: { si: 'kg', factor: 1 },
  g: { si: 'kg', factor: 1e-3 },
  mg: { si: 'kg', factor: 1e-6 },
  s: { si: 's', factor: 1 },
  ms: { si: 's', factor: 1e-3 },
  min: { si: 's', factor: 60 },
  h: { si: 's', factor: 3600 },
  Hz: { si: 'Hz', factor: 1 },
  kHz: { si: 'Hz', factor: 1e3 },
  MHz: { si: 'Hz', factor: 1e6 },
  N: { si: 'N', factor: 1 },
  kN: { si: 'N', factor: 1e3 },
  J: { si: 'J', factor: 1 },
  kJ: { si: 'J', factor: 1e3 },
  MJ: { si: 'J', factor: 1e6 },
  eV: { si: 'J', factor: 1.602176634e-19 },
  W: { si: 'W', factor: 1 },
  kW: { si: 'W', factor: 1e3 },
  MW: { si: 'W', factor: 1e6 },
  Pa: { si: 'Pa', factor: 1 },
  kPa: { si: 'Pa', factor: 1e3 },
  MPa: { si: 'Pa', factor: 1e6 },
  GPa: { si: 'Pa', factor: 1e9 },
  bar: { si: 'Pa', factor: 1e5 },
  atm: { si: 'Pa', factor: 101_325 },
  K: { si: 'K', factor: 1 },
  '°C': { si: 'K', factor: 1, offset: 273.15 },
  C: { si: 'C', factor: 1 },
  V: { si: 'V', factor: 1 },
  kV: { si: 'V', factor: 1e3 },
  mV: { si: 'V', factor: 1e-3 },
  A: { si: 'A', factor: 1 },
  mA: { si: 'A', factor: 1e-3 },
  ohm: { si: 'ohm', factor: 1 },
  Ω: { si: 'ohm', factor: 1 },
  F: { si: 'F', factor: 1 },
  uF: { si: 'F', factor: 1e-6 },
  µF: { si: 'F', factor: 1e-6 },
  H: { si: 'H', factor: 1 },
  T: { si: 'T', factor: 1 },
  mol: { si: 'mol', factor: 1 },
  rad: { si: 'rad', factor: 1 },
  deg: { si: 'rad', factor: Math.PI / 180 },
  L: { si: 'm^3', factor: 1e-3 },
  mL: { si: 'm^3', factor: 1e-6 },
};

/** Unit words, singular or plural, as the names above. */
const WORDS: Readonly<Record<string, string>> = {
  meter: 'm',
  metre: 'm',
  kilometer: 'km',
  kilometre: 'km',
  centimeter: 'cm',
  centimetre: 'cm',
  millimeter: 'mm',
  millimetre: 'mm',
  kilogram: 'kg',
  gram: 'g',
  second: 's',
  sec: 's',
  minute: 'min',
  hour: 'h',
  newton: 'N',
  joule: 'J',
  watt: 'W',
  pascal: 'Pa',
  kelvin: 'K',
  volt: 'V',
  ampere: 'A',
  amp: 'A',
  degree: 'deg',
};

export interface Quantity {
  /** As written in the question: "3 m/s". */
  text: string;
  value: number;
  unit: string;
  /** The value in SI units of `dimension`. */
  si: number;
  dimension: Dimension;
}

/** A unit expression (names joined by / and *, powers ^n, ² and ³) → its SI scale; null when a name is not a unit. */
function scaleOf(unit: string): { factor: number; offset: number; si: string } | null {
  const text = unit.replaceAll('²', '^2').replaceAll('³', '^3').replaceAll('·', '*').replace(/\s+/g, '');
  if (text === '' || text === '1') return null;
  if (text === '°C' || text === 'degC') return { factor: 1, offset: 273.15, si: 'K' };
  const parts = text.split(/([/*])/);
  let factor = 1;
  const si: string[] = [];
  for (let i = 0; i < parts.length; i += 2) {
    const m = /^([A-Za-zµΩ°]+)(?:\^(-?\d+))?$/.exec(parts[i]!);
    if (!m) return null;
    // Own keys only: a name such as "constructor" is not a unit.
    const singular = m[1]!.toLowerCase().replace(/s$/, '');
    const word = Object.hasOwn(WORDS, singular) ? WORDS[singular] : undefined;
    const name = Object.hasOwn(PREFIXED, m[1]!) ? m[1]! : word;
    const scale = name !== undefined && Object.hasOwn(PREFIXED, name) ? PREFIXED[name] : undefined;
    if (!scale || scale.offset !== undefined) return null;
    const power = m[2] === undefined ? 1 : Number(m[2]);
    const divided = i > 0 && parts[i - 1] === '/';
    factor = divided ? factor / scale.factor ** power : factor * scale.factor ** power;
    si.push(`${i > 0 ? parts[i - 1] : ''}(${scale.si})${power === 1 ? '' : `^${power}`}`);
  }
  return { factor, offset: 0, si: si.join('') };
}

function dimensionOf(si: string): Dimension | null {
  try {
    return parseUnit(si);
  } catch {
    return null;
  }
}

const QUANTITY = /(?<![\w.])(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(°C|[A-Za-zµΩ]+(?:\^-?\d+|[²³])?(?:\s*[/*·]\s*[A-Za-zµΩ]+(?:\^-?\d+|[²³])?)*)/g;

/** Every number in the text followed by a unit this reader knows, in the order written. */
export function readQuantities(text: string): Quantity[] {
  const out: Quantity[] = [];
  for (const m of text.matchAll(QUANTITY)) {
    const value = Number(m[1]);
    const scale = scaleOf(m[2]!);
    if (!Number.isFinite(value) || scale === null) continue;
    const dimension = dimensionOf(scale.si);
    if (dimension === null) continue;
    out.push({ text: `${m[1]} ${m[2]}`, value, unit: m[2]!, si: value * scale.factor + scale.offset, dimension });
  }
  return out;
}

export interface InputUnit {
  key: string;
  unit: string;
  default?: unknown;
}

export interface Placement {
  key: string;
  value: number;
  unit: string;
  /** The quantity as the question wrote it. */
  from: string;
}

export interface Placed {
  /** Input key → value in the input's unit. */
  inputs: Record<string, number>;
  placed: Placement[];
  /** Quantities no input took (no input of that dimension, or every such input already taken). */
  unplaced: string[];
}

const sameDimension = (a: Dimension, b: Dimension): boolean => a.every((v, i) => Math.abs(v - b[i]!) < 1e-12);

/** Place each quantity on the first free input of its dimension (numeric inputs only), in the input's unit. */
export function placeQuantities(quantities: readonly Quantity[], inputs: readonly InputUnit[]): Placed {
  const slots = inputs.flatMap((input) => {
    if (input.default !== undefined && typeof input.default !== 'number') return [];
    const scale = scaleOf(input.unit);
    const dimension = scale ? dimensionOf(scale.si) : null;
    return scale && dimension ? [{ input, scale, dimension }] : [];
  });
  const taken = new Set<string>();
  const result: Placed = { inputs: {}, placed: [], unplaced: [] };
  for (const q of quantities) {
    const slot = slots.find((s) => !taken.has(s.input.key) && sameDimension(s.dimension, q.dimension));
    if (!slot) {
      result.unplaced.push(q.text);
      continue;
    }
    taken.add(slot.input.key);
    const value = Number(((q.si - slot.scale.offset) / slot.scale.factor).toPrecision(15));
    result.inputs[slot.input.key] = value;
    result.placed.push({ key: slot.input.key, value, unit: slot.input.unit, from: q.text });
  }
  return result;
}

/** "mass_kg = 2 kg (from "2 kg"), velocity_m_s = 3 m/s (from "3 m/s")". */
export function placementText(placed: readonly Placement[]): string {
  return placed.map((p) => `${p.key} = ${p.value} ${p.unit} (from "${p.from}")`).join(', ');
}
