/** A moment as the tables show it: the time alone today, the date and time before. */
export function whenText(iso: string, now: Date = new Date()): string {
  const when = new Date(iso);
  return now.toDateString() === when.toDateString()
    ? when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : when.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}
