import { useQuery } from "@tanstack/react-query";
import { Link, NavLink, Outlet, useSearchParams } from "react-router-dom";

import { canOperate, isAdmin } from "../auth/roles";
import { useCurrentUser, useLogout } from "../queries/auth";
import { healthQuery } from "../queries/health";
import { useTheme } from "./theme";

function HealthIndicator() {
  const { data, isError } = useQuery(healthQuery());
  if (isError) {
    return (
      <span className="health" title="The API did not answer">
        <span className="dot bad" /> API unreachable
      </span>
    );
  }
  if (data === undefined) return null;
  const workers = data.workers.length;
  const text = workers === 0 ? "no worker running: new jobs will wait" : `${String(workers)} worker${workers > 1 ? "s" : ""} online`;
  return (
    <span className="health" title={`database ${data.database}, redis ${data.redis}`}>
      <span className={`dot ${data.status === "ok" ? "ok" : "bad"}`} /> {text}
    </span>
  );
}

function ThemeToggle() {
  const [theme, setTheme] = useTheme();
  const next = theme === "dark" ? "light" : "dark";
  return (
    <button className="small" onClick={() => setTheme(next)} title={`Switch to the ${next} theme`}>
      {theme === "dark" ? "☀ Light" : "☾ Dark"}
    </button>
  );
}

function UserMenu() {
  const user = useCurrentUser();
  const logout = useLogout();
  return (
    <span className="user-menu">
      <Link to="/password" title="Change your password" data-testid="current-user">
        {user.username}
      </Link>
      <span className={`badge role-${user.role}`}>{user.role}</span>
      <button
        className="small"
        disabled={logout.isPending}
        onClick={() => logout.mutate()}
      >
        Log out
      </button>
    </span>
  );
}

export function Layout() {
  const [search] = useSearchParams();
  const { role } = useCurrentUser();
  const backupForm = search.get("kind") === "backup";
  return (
    <>
      <header className="topbar">
        <NavLink to="/" className="brand">
          restore<span>scope</span>
        </NavLink>
        <nav>
          <NavLink to="/" end>
            Jobs
          </NavLink>
          {canOperate(role) && (
            <>
              {/* NavLink matches the path only: the query tells the two forms apart. */}
              <NavLink to="/launch" end className={({ isActive }) => (isActive && !backupForm ? "active" : "")}>
                New restore
              </NavLink>
              <NavLink to="/launch?kind=backup" className={({ isActive }) => (isActive && backupForm ? "active" : "")}>
                New backup
              </NavLink>
              <NavLink to="/import">Import trace</NavLink>
            </>
          )}
          <NavLink to="/servers">Saved servers</NavLink>
          <NavLink to="/trends">Trends</NavLink>
          <NavLink to="/protected">Protected databases</NavLink>
          {isAdmin(role) && (
            <>
              <NavLink to="/users">Users</NavLink>
              <NavLink to="/audit">Audit log</NavLink>
            </>
          )}
        </nav>
        <span className="spacer" />
        <HealthIndicator />
        <UserMenu />
        <ThemeToggle />
      </header>
      <main>
        <Outlet />
      </main>
    </>
  );
}
