/**
 * The option value types: one record per type name with its parser, canonical printer, zero
 * value and repetition rule. The option tables name these types; the parser and --help use them.
 *
 * Repetition follows pflag: a scalar given twice keeps the last value; stringSlice replaces its
 * default on first use and appends afterwards; stringArray, namedCertKey and taints append; the
 * map types merge (later keys win).
 */
import {
  formatDuration, formatFloat, formatPortRange, parseBool, parseDurationValue, parseFloat32,
  parseFloat64, parseGoInteger, parseInt32, parseIpNetValue, parseIpValue, parsePortRange,
  parseUint, parseVersionMode, type PortRange, type VersionMode,
} from './value-scalars.js';
import {
  formatBoolMap, formatNamedCertKey, formatStringMap, formatTaints, parseBoolMap,
  parseNamedCertKey, parseStringMap, parseTaints, splitCsv, type NamedCertKey, type Taint,
} from './value-lists.js';

export type { PortRange, VersionMode, NamedCertKey, Taint };

/** TypeScript representation of each option type in a config object. */
export interface ValueTypeMap {
  bool: boolean;
  int: number;
  int32: number;
  uint: number;
  float: number;
  float32: number;
  string: string;
  /** Canonical address text; '' when unset. */
  ip: string;
  /** Canonical CIDR text; '' when unset. */
  ipNet: string;
  portRange: PortRange;
  /** Milliseconds. */
  duration: number;
  stringSlice: string[];
  stringArray: string[];
  mapStringString: Record<string, string>;
  mapStringBool: Record<string, boolean>;
  namedCertKey: NamedCertKey[];
  taints: Taint[];
  version: VersionMode;
}

export type ValueTypeName = keyof ValueTypeMap;

export interface ValueType<T> {
  /** Parses one occurrence's text; throws Error(reason). */
  parse(text: string): T;
  /** Combines an earlier explicit occurrence with a later one. */
  combine(earlier: T, later: T): T;
  format(value: T): string;
  /** Value used when the table gives no default. */
  zero(): T;
  /** Text implied when the option is given without "=value" (bool and version only). */
  impliedText?: string;
}

const last = <T>(_earlier: T, later: T): T => later;
const append = <T>(earlier: T[], later: T[]): T[] => [...earlier, ...later];
const merge = <T>(earlier: Record<string, T>, later: Record<string, T>): Record<string, T> => ({ ...earlier, ...later });

const intType = (parse: (t: string) => number): ValueType<number> => ({
  parse: (t) => parse(t.trim()), combine: last, format: String, zero: () => 0,
});
const floatType = (parse: (t: string) => number): ValueType<number> => ({
  parse: (t) => parse(t.trim()), combine: last, format: formatFloat, zero: () => 0,
});

export const VALUE_TYPES: { readonly [K in ValueTypeName]: ValueType<ValueTypeMap[K]> } = {
  bool: { parse: parseBool, combine: last, format: String, zero: () => false, impliedText: 'true' },
  int: intType(parseGoInteger),
  int32: intType(parseInt32),
  uint: intType(parseUint),
  float: floatType(parseFloat64),
  float32: floatType(parseFloat32),
  string: { parse: (t) => t, combine: last, format: (v) => v, zero: () => '' },
  ip: { parse: parseIpValue, combine: last, format: (v) => v, zero: () => '' },
  ipNet: { parse: parseIpNetValue, combine: last, format: (v) => v, zero: () => '' },
  portRange: { parse: parsePortRange, combine: last, format: formatPortRange, zero: () => ({ base: 0, size: 0 }) },
  duration: { parse: parseDurationValue, combine: last, format: formatDuration, zero: () => 0 },
  stringSlice: { parse: splitCsv, combine: append, format: (v) => `[${v.join(',')}]`, zero: () => [] },
  stringArray: { parse: (t) => [t], combine: append, format: (v) => `[${v.join(',')}]`, zero: () => [] },
  mapStringString: { parse: parseStringMap, combine: merge, format: formatStringMap, zero: () => ({}) },
  mapStringBool: { parse: parseBoolMap, combine: merge, format: formatBoolMap, zero: () => ({}) },
  namedCertKey: {
    parse: (t) => [parseNamedCertKey(t)], combine: append,
    format: (v) => `[${v.map(formatNamedCertKey).join(';')}]`, zero: () => [],
  },
  taints: { parse: parseTaints, combine: append, format: formatTaints, zero: () => [] },
  version: {
    parse: parseVersionMode, combine: last, format: String, zero: () => false, impliedText: 'true',
  },
};

/** Looks up a type record with its value type erased, for code that walks a table. */
export function valueType(name: ValueTypeName): ValueType<unknown> {
  return VALUE_TYPES[name] as unknown as ValueType<unknown>;
}
