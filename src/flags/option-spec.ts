/**
 * The shape of one option in a daemon's option table, and the config type derived from a
 * table. Tables are plain data (`as const satisfies readonly OptionSpec[]`); the config type
 * is a mapped type over the table, so adding a row adds a typed field and nothing else.
 */
import type { ValueTypeMap, ValueTypeName } from './value-types.js';
import type { SyntaxName } from './syntax-checks.js';

export interface OptionSpec {
  /** Long name without dashes, spelled as on the command line (underscores kept). */
  readonly name: string;
  readonly type: ValueTypeName;
  /** Default as command-line text, parsed by the type's parser; absent = the type's zero value. */
  readonly default?: string;
  /** Our own one-line description for --help. */
  readonly description: string;
  /** --help section. */
  readonly group: string;
  /** One-letter alias (-h, -v). */
  readonly short?: string;
  /** Set when the option is deprecated: what to use instead; a warning is printed on use. */
  readonly deprecated?: string;
  /** A deprecated option whose value also fills this successor option when that is unset. */
  readonly replacedBy?: string;
  /** True for options beyond the reference (listed separately in --help and the spec check). */
  readonly ours?: boolean;
  /** Allowed values; for list types every element must be one of them. '' passes when there is no default. */
  readonly oneOf?: readonly string[];
  /** For a string holding a comma-separated list: allowed elements. */
  readonly listOf?: readonly string[];
  /** Named value-syntax check run after parsing (see syntax-checks.ts). */
  readonly syntax?: SyntaxName;
  /** mapStringString only: a bare key (no "=") means key=true, as --runtime-config allows. */
  readonly bareKeys?: boolean;
  /** string only: repeated occurrences are joined with "," instead of the last one winning. */
  readonly joinRepeats?: boolean;
  /** Hidden from --help (aliases of ours kept for compatibility). */
  readonly hidden?: boolean;
}

type Dashed<S extends string> = S extends `${infer H}_${infer T}` ? `${H}-${Dashed<T>}` : S;
type CamelDashed<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<CamelDashed<T>>}` : S;
/** `kvstore-servers` -> `kvstoreServers`; `concurrent_rc_syncs` -> `concurrentRcSyncs`. */
export type CamelCase<S extends string> = CamelDashed<Dashed<S>>;

/** The typed config object of a table: one camelCase field per option. */
export type ConfigOf<T extends readonly OptionSpec[]> = {
  [E in T[number] as CamelCase<E['name']>]: ValueTypeMap[E['type']];
};

/** Runtime twin of CamelCase. */
export function camelCase(name: string): string {
  return name.replace(/[-_]+([A-Za-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** Go flag normalisation used by Kubernetes: "_" and "-" are the same separator. */
export function normalizeName(name: string): string {
  return name.replace(/_/g, '-');
}
