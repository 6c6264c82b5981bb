// What the page remembers across a reload, and how a seat or a spectator travels in a link.
//
// A seat token is a password for one seat, a watch token a read-only pass to the public view of
// the match. Both live in sessionStorage (this tab only, gone when the tab closes) and travel to
// other people in the URL *fragment* ("#match=…&seat=1&token=…", "#match=…&watch=…"): browsers
// never send the fragment to any server, so it appears in no request, no proxy log and no
// Referer header. The page removes it from the address bar once read.

/** A pass to one match: a seat's token, or (seat undefined) a spectator's watch token. */
export interface Pass {
  readonly matchId: string;
  /** The seat the token plays; undefined for a watch token. */
  readonly seat?: number;
  readonly token: string;
}

/** A seat the page plays itself, with its own token. */
export interface Seat extends Pass {
  readonly seat: number;
}

/** Everything a reload needs to come back to the table. */
export interface Saved {
  readonly me: Pass;
  /** The invitation link of each seat a person plays, by seat. */
  readonly invites?: Readonly<Record<number, string>>;
  /** The spectator link, once the service has given this seat its watch token. */
  readonly watchLink?: string;
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

function link(fields: Record<string, string>): string {
  return `${location.origin}${location.pathname}#${new URLSearchParams(fields)}`;
}

/** The link that seats the holder of `seat` at this page's table. */
export function inviteLink(seat: Seat): string {
  return link({ match: seat.matchId, seat: String(seat.seat), token: seat.token });
}

/** The link that lets anyone watch the match, with a watch token (read-only). */
export function watchLink(matchId: string, watchToken: string): string {
  return link({ match: matchId, watch: watchToken });
}

/** The pass a link carries (a seat, or a spectator's), read from the fragment and then erased
 * from the address bar (and so from the history), or undefined when the page was opened
 * plainly. */
export function takeLink(): Pass | undefined {
  if (location.hash.length < 2) return undefined;
  const fields = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, "", location.pathname + location.search);
  const matchId = fields.get("match");
  const watch = fields.get("watch");
  if (matchId && watch) return { matchId, token: watch };
  const token = fields.get("token");
  const seat = Number(fields.get("seat"));
  if (!matchId || !token || !fields.has("seat") || !Number.isInteger(seat)) return undefined;
  return { matchId, seat, token };
}

/** The language the player chose with the switch, kept for their next visits. */
export function savedLanguage(): string | null {
  return localStorage.getItem(LANGUAGE_KEY);
}

export function saveLanguage(lang: string): void {
  localStorage.setItem(LANGUAGE_KEY, lang);
}
