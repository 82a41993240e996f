/**
 * What each role may do, as the API decides it (backend/app/api/deps.py): the page only hides what the API would
 * refuse with a 403, so a viewer is not offered buttons that cannot work.
 */

export type Role = "viewer" | "operator" | "admin";

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

export function roleAllows(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

/** Launch, cancel and retry jobs, import traces. */
export function canOperate(role: Role): boolean {
  return roleAllows(role, "operator");
}

/** Manage users and saved servers, read the audit log. */
export function isAdmin(role: Role): boolean {
  return roleAllows(role, "admin");
}

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  viewer: "reads jobs, timelines and backups",
  operator: "also launches, cancels and retries jobs and imports traces",
  admin: "also manages users and saved servers, and reads the audit log",
};
