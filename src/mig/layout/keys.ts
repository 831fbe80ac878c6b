// The two string grammars of a mig-parted config: MIG profile keys (`3g.40gb`, `1c.3g.40gb`,
// `1g.10gb+me`) and PCI device ids (`0x233010DE`, optionally `:<subsystem>`).

export interface ProfileKey {
  gi: string;
  ciSlices: number | null;
}

// mig-parted: `[<C>c.]<G>g.<GB>gb[+attr]`. Attributes beyond `+me` (`+me.all`, `+gfx`, `-me`)
// are the names newer drivers print; accepting them lets the planner say which GPU lacks them.
const PROFILE = /^(?:([1-8])c\.)?([1-8])g\.(\d{1,4})gb([+-][a-z]+(?:\.[a-z]+)?)?$/;

export function parseProfileKey(key: string): ProfileKey | null {
  const m = PROFILE.exec(key);
  if (!m) return null;
  const c = m[1] === undefined ? null : Number(m[1]);
  const g = Number(m[2]);
  if (c !== null && c > g) return null;
  const gi = `${g}g.${m[3]}gb${m[4] ?? ""}`;
  // mig-parted prints `3c.3g.40gb` as `3g.40gb`: a CI as large as its GI is the whole GI.
  return { gi, ciSlices: c === null || c === g ? null : c };
}

/**
 * A device id as mig-parted's `NewDeviceIDFromString` takes it (a 32-bit number, usually hex
 * with 0x, device in the high half and vendor in the low), normalised to `0xDDDDVVVV`, with an
 * optional `:0xSSSSVVVV` subsystem. Null when it is not one.
 */
export function normaliseDeviceId(s: string): string | null {
  const parts = s.trim().split(":");
  if (parts.length > 2) return null;
  const out: string[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]{1,8}$/i.test(p)) n = Number.parseInt(p.slice(2), 16);
    else if (/^\d{1,10}$/.test(p)) n = Number(p);
    else return null;
    if (!Number.isSafeInteger(n) || n > 0xffffffff) return null;
    out.push(`0x${n.toString(16).toUpperCase().padStart(8, "0")}`);
  }
  return out.join(":");
}
