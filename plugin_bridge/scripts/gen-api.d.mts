export const DEFAULT_SCHEMA: string;
export const DEFAULT_OUT: string;
export function typeOf(schema: unknown, indent?: string): string;
export function generate(openapi: unknown): string;
export function dumpSchema(): string;
