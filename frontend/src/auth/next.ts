/**
 * Where to go after logging in: the page that sent you to the login, carried in ?next=. Only a path of this app is
 * followed, so a crafted link cannot send someone elsewhere after they typed their password.
 */

export function safeNext(next: string | null | undefined): string {
  if (next === null || next === undefined || !next.startsWith("/") || next.startsWith("//") || next.includes("\\")) {
    return "/";
  }
  // The login and password pages are steps on the way, never the destination.
  if (next === "/login" || next.startsWith("/login?") || next === "/password" || next.startsWith("/password?")) {
    return "/";
  }
  return next;
}

/** The login page's address that returns to `path` afterwards. */
export function loginPath(path: string): string {
  const next = safeNext(path);
  return next === "/" ? "/login" : `/login?next=${encodeURIComponent(next)}`;
}
