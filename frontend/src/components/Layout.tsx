import { useQuery } from "@tanstack/react-query";
import { NavLink, Outlet } from "react-router-dom";

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

export function Layout() {
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
          <NavLink to="/launch">New restore</NavLink>
          <NavLink to="/import">Import trace</NavLink>
        </nav>
        <span className="spacer" />
        <HealthIndicator />
        <ThemeToggle />
      </header>
      <main>
        <Outlet />
      </main>
    </>
  );
}
