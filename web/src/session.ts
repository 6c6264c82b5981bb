// What the page remembers across a reload, and how an invitation or a spectator travels in a link.
//
// A seat token is a password for one seat, a watch token a read-only pass to the public view of
// the match, an invitation a one-time ticket that ClaimSeat exchanges for a seat's token. They
// live in sessionStorage (this tab only, gone when the tab closes); a page holds its own seat's
// token only. Invitations and watch tokens travel to other people in the URL *fragment*
// ("#match=…&seat=1&invite=…", "#match=…&watch=…"): browsers never send the fragment to any
// server, so it appears in no request, no proxy log and no Referer header. The page removes it
// from the address bar once read. (A link "#match=…&seat=1&token=…" still seats its holder: a
// program that created a match without invitations may hand a seat's token on that way.)

/** A pass to one match: a seat's token, or (seat undefined) a spectator's watch token. */
export interface Pass {
  readonly matchId: string;
  /** The seat the token plays; undefined for a watch token. */
  readonly seat?: number;
  readonly token: string;
}

/** An invitation to a seat: what ClaimSeat needs (the match and the code), and the seat it
 * opens, to say so before claiming. */
export interface Invite {
  readonly matchId: string;
  readonly seat: number;
  readonly code: string;
}

/** What a link brings: a pass to sit down (or watch) with, or an invitation to claim first. */
export type Link = { readonly pass: Pass } | { readonly invite: Invite };

/** Everything a reload needs to come back to the table. */
export interface Saved {
  readonly me: Pass;
  /** The invitation link of each other person's seat, by seat (the creator's page only). */
  readonly invites?: Readonly<Record<number, string>>;
  /** The spectator link, once the service has given this seat its watch token. */
  readonly watchLink?: string;
}

const KEY = "basra.table";
const INVITE_KEY = "basra.invite";
const LANGUAGE_KEY = "basra.language";
const NAME_KEY = "basra.name";

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

/** The invitation this tab was opened with, until it is claimed (or refused): a reload of the
 * name form keeps it. */
export function loadInvite(): Invite | undefined {
  const raw = sessionStorage.getItem(INVITE_KEY);
  if (raw === null) return undefined;
  try {
    const invite = JSON.parse(raw) as Invite;
    return typeof invite.code === "string" && typeof invite.matchId === "string" ? invite : undefined;
  } catch {
    return undefined;
  }
}

export function saveInvite(invite: Invite): void {
  sessionStorage.setItem(INVITE_KEY, JSON.stringify(invite));
}

export function forgetInvite(): void {
  sessionStorage.removeItem(INVITE_KEY);
}

function link(fields: Record<string, string>): string {
  return `${location.origin}${location.pathname}#${new URLSearchParams(fields)}`;
}

/** The link that invites its holder to `invite`'s seat: it carries the invitation, never a
 * token. */
export function inviteLink(invite: Invite): string {
  return link({ match: invite.matchId, seat: String(invite.seat), invite: invite.code });
}

/** The link that lets anyone watch the match, with a watch token (read-only). */
export function watchLink(matchId: string, watchToken: string): string {
  return link({ match: matchId, watch: watchToken });
}

/** What a link carries (an invitation, a spectator's pass, a seat's), read from the fragment
 * and then erased from the address bar (and so from the history), or undefined when the page
 * was opened plainly. */
export function takeLink(): Link | undefined {
  if (location.hash.length < 2) return undefined;
  const fields = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, "", location.pathname + location.search);
  const matchId = fields.get("match");
  const watch = fields.get("watch");
  if (matchId && watch) return { pass: { matchId, token: watch } };
  const seat = Number(fields.get("seat"));
  if (!matchId || !fields.has("seat") || !Number.isInteger(seat)) return undefined;
  const code = fields.get("invite");
  if (code) return { invite: { matchId, seat, code } };
  const token = fields.get("token");
  return token ? { pass: { matchId, seat, token } } : undefined;
}

/** The language the player chose with the switch, kept for their next visits. */
export function savedLanguage(): string | null {
  return localStorage.getItem(LANGUAGE_KEY);
}

export function saveLanguage(lang: string): void {
  localStorage.setItem(LANGUAGE_KEY, lang);
}

/** The name the player last sat down under, offered again next time. */
export function savedName(): string {
  return localStorage.getItem(NAME_KEY) ?? "";
}

export function saveName(name: string): void {
  localStorage.setItem(NAME_KEY, name);
}
