/**
 * Table cells of CRD additionalPrinterColumns, as apiextensions' TableConvertor fills them: the
 * first value the column's JSONPath selects, converted to the column's type. String columns
 * print any value (objects and lists as JSON); the other types take only matching values, and
 * everything else (no match, wrong type, bad path) is a null cell.
 */
import { humanDuration } from '../resources/common/table-util.js';
import { goJson, goNumber } from './field-errors.js';
import { evaluateJsonPath } from './jsonpath.js';

export interface PrinterColumn {
  type: string;
  jsonPath: string;
  format?: string;
}

/** Go's time.RFC3339 layout (fractional seconds accepted, as Go's parser does). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The cell for one selected value. `format` is only a display hint for clients (the server
 * sends it in the column definition), so it does not change the cell.
 */
export function formatCell(value: unknown, columnType: string, columnFormat = '', now: Date = new Date()): unknown {
  if (value === null || value === undefined) return null;
  switch (columnType) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'number') return goNumber(value);
      if (typeof value === 'boolean') return String(value);
      return goJson(value);
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date':
      return typeof value === 'string' ? dateCell(value, now) : null;
    default:
      return null;
  }
}

/** metav1.Time's query-parameter parsing, then kubectl's human-readable age. */
function dateCell(s: string, now: Date): string {
  if (s === '' || s === 'null') return '<unknown>';
  const t = RFC3339.test(s) ? Date.parse(s) : NaN;
  if (Number.isNaN(t)) return '<invalid>';
  return humanDuration(now.getTime() - t);
}

/** The whole cell of a column for an object: null when the path selects nothing or is invalid. */
export function columnCell(obj: unknown, column: PrinterColumn, now: Date = new Date()): unknown {
  let found: unknown[];
  try {
    found = evaluateJsonPath(obj, column.jsonPath);
  } catch {
    return null;
  }
  return found.length ? formatCell(found[0], column.type, column.format, now) : null;
}
