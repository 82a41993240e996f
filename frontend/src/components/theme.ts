import { useCallback, useSyncExternalStore } from "react";

import type { Theme } from "../timeline/kinds";

const STORAGE_KEY = "restorescope.theme";
const listeners = new Set<() => void>();

function currentTheme(): Theme {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

/** The theme (set before first paint by index.html), and a setter that remembers the choice. */
export function useTheme(): [Theme, (theme: Theme) => void] {
  const theme = useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    currentTheme,
  );
  const setTheme = useCallback((next: Theme) => {
    document.documentElement.dataset.theme = next;
    localStorage.setItem(STORAGE_KEY, next);
    for (const listener of listeners) listener();
  }, []);
  return [theme, setTheme];
}
