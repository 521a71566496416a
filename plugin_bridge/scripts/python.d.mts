export const PLUGIN_DIR: string;
export const REPO_ROOT: string;
export function resolvePython(env?: Record<string, string | undefined>): string;
