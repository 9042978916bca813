/** @peculiar/x509 for the CSR controllers, loaded on first use (src/util/pki.ts loads it). */
import type * as X509 from '@peculiar/x509';

export type X509Lib = typeof X509;
export type { X509 };
export { loadX509 } from '../../../../util/pki.js';
