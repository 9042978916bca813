/**
 * Per-message plans for the protobuf codec: each declared field resolved once into what the
 * hot loops need (tags, a small kind code, the scalar code, the nested plan), so that
 * encoding and decoding do no name lookups per value. Built lazily from the schema registry.
 */
import { errors } from '../meta/status.js';
import { isListWrapper, schema, specialOf } from '../schema/registry.js';
import type { FieldDecl, ScalarType, SpecialType } from '../schema/types.js';

export const WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5;

export enum Kind { Scalar, Special, Wrapper, Message }
export enum Scalar { String, Bool, Int32, Uint32, Int64, Uint64, Double, Float, Bytes }

const SCALAR_CODES: Readonly<Record<ScalarType, Scalar>> = {
  string: Scalar.String, bool: Scalar.Bool, int32: Scalar.Int32, uint32: Scalar.Uint32, int64: Scalar.Int64,
  uint64: Scalar.Uint64, double: Scalar.Double, float: Scalar.Float, bytes: Scalar.Bytes,
};

export interface FieldPlan {
  readonly decl: FieldDecl;
  /** JSON name. */
  readonly name: string;
  readonly number: number;
  readonly kind: Kind;
  /** Scalar code (Kind.Scalar), or the item scalar of a list wrapper. */
  readonly scalar: Scalar;
  /** Wire type of one value. */
  readonly wire: number;
  /** Tag of one value of this field. */
  readonly tag: number;
  /** Tag of a map entry's value (field 2). */
  readonly mapValueTag: number;
  readonly special: SpecialType | undefined;
  readonly message: string | undefined;
  readonly optional: boolean;
  readonly repeated: boolean;
  readonly map: boolean;
  readonly inline: boolean;
  /** Keep a zero value when reading (pointer, always-written JSON field, or a message). */
  readonly keepZero: boolean;
  /** The nested message's plan, resolved on first use. */
  sub: MessagePlan | undefined;
}

export interface MessagePlan {
  readonly name: string;
  /** In ascending field number order: the order Go writes. */
  readonly fields: readonly FieldPlan[];
  /** Indexed by field number (sparse). */
  readonly byNumber: readonly (FieldPlan | undefined)[];
}

export function tagOf(number: number, wire: number): number {
  return ((number << 3) | wire) >>> 0;
}

export function wireOfScalar(s: Scalar): number {
  switch (s) {
    case Scalar.Double: return WIRE_FIXED64;
    case Scalar.Float: return WIRE_FIXED32;
    case Scalar.String: case Scalar.Bytes: return WIRE_LEN;
    default: return WIRE_VARINT;
  }
}

const plans = new Map<string, MessagePlan>();

function fieldPlan(f: FieldDecl): FieldPlan {
  let kind: Kind = Kind.Scalar;
  let scalar = Scalar.String;
  let special: SpecialType | undefined;
  let message: string | undefined;
  if ('scalar' in f.type) {
    scalar = SCALAR_CODES[f.type.scalar];
  } else {
    message = f.type.message;
    special = specialOf(message);
    kind = special ? Kind.Special : isListWrapper(message) ? Kind.Wrapper : Kind.Message;
  }
  const wire = kind === Kind.Scalar ? wireOfScalar(scalar) : WIRE_LEN;
  return {
    decl: f, name: f.name, number: f.number, kind, scalar, wire,
    tag: tagOf(f.number, wire), mapValueTag: tagOf(2, wire), special, message,
    optional: f.optional === true, repeated: f.repeated === true, map: f.map === true,
    inline: f.inline === true && kind === Kind.Message,
    keepZero: f.optional === true || f.emitEmpty === true || kind !== Kind.Scalar,
    sub: undefined,
  };
}

export function messagePlan(name: string): MessagePlan {
  let p = plans.get(name);
  if (!p) {
    const decl = schema.message(name);
    if (!decl) throw errors.internal(`no schema for protobuf message ${name}`);
    const fields = [...decl.fields].sort((a, b) => a.number - b.number).map(fieldPlan);
    const byNumber: (FieldPlan | undefined)[] = [];
    for (const f of fields) byNumber[f.number] = f;
    p = { name, fields, byNumber };
    plans.set(name, p);
  }
  return p;
}

/** The plan of a field's message type. */
export function subPlan(f: FieldPlan): MessagePlan {
  if (f.sub === undefined) f.sub = messagePlan(f.message ?? '');
  return f.sub;
}

/** The zero JSON value of a field's type (a map entry without a value). */
export function zeroOf(f: FieldPlan): unknown {
  switch (f.kind) {
    case Kind.Message: return {};
    case Kind.Wrapper: return [];
    case Kind.Special:
      switch (f.special) {
        case 'Quantity': return '0';
        case 'IntOrString': return 0;
        case 'Duration': return '0s';
        default: return null;
      }
    default:
      return f.scalar === Scalar.String || f.scalar === Scalar.Bytes ? '' : f.scalar === Scalar.Bool ? false : 0;
  }
}
