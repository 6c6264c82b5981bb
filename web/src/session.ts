// What the page remembers across a reload, and how a seat travels in an invitation link.
//
// A seat token is a password for one seat. It lives in sessionStorage (this tab only, gone when
// the tab closes) and travels to the second player in the URL *fragment* ("#match=…&seat=1&
// token=…"): browsers never send the fragment to any server, so it appears in no request, no
// proxy log and no Referer header. The page removes it from the address bar once read.

/** One seat of one match, as the token's holder knows it. */
export interface Seat {
  readonly matchId: string;
  readonly seat: number;
  readonly token: string;
}

/** Everything a reload needs to come back to the table. */
export interface Saved {
  readonly me: Seat;
  /** The other seat when the page plays it (the bot). */
  readonly bot?: Seat;
  /** The invitation link for the other seat when a person plays it. */
  readonly invite?: string;
  /** The last version this page showed: WatchMatch resumes after it. */
  readonly version: number;
}

const KEY = "basra.table";
const LANGUAGE_KEY = "basra.language";

export function load(): Saved | undefined {
  const raw = sessionStorage.getItem(KEY);
  if (raw === null) return undefined;
  try {
    const saved = JSON.parse(raw) as Saved;
    return typeof saved.me?.token === "string" ? saved : undefined;
  } catch {
    return undefined;
  }
}

export function save(saved: Saved): void {
  sessionStorage.setItem(KEY, JSON.stringify(saved));
}

export function forget(): void {
  sessionStorage.removeItem(KEY);
}

/** The link that seats the holder of `seat` at this page's table. */
export function inviteLink(seat: Seat): string {
  const fragment = new URLSearchParams({ match: seat.matchId, seat: String(seat.seat), token: seat.token });
  return `${location.origin}${location.pathname}#${fragment}`;
}

/** The seat an invitation link carries, read from the fragment and then erased from the
 * address bar (and so from the history), or undefined when the page was opened plainly. */
export function takeInvitation(): Seat | undefined {
  if (location.hash.length < 2) return undefined;
  const fields = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, "", location.pathname + location.search);
  const matchId = fields.get("match");
  const token = fields.get("token");
  const seat = Number(fields.get("seat"));
  if (!matchId || !token || !Number.isInteger(seat)) return undefined;
  return { matchId, seat, token };
}

/** The language the player chose with the switch, kept for their next visits. */
export function savedLanguage(): string | null {
  return localStorage.getItem(LANGUAGE_KEY);
}

export function saveLanguage(lang: string): void {
  localStorage.setItem(LANGUAGE_KEY, lang);
}
