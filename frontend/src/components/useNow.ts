import { useEffect, useState } from "react";

/** The time now, in ms, refreshed every `intervalMs`, so "5 min ago" moves on while a page stays open. */
export function useNow(intervalMs = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), intervalMs);
    return () => window.clearInterval(timer);
  }, [intervalMs]);
  return now;
}
