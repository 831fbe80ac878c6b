// What the simulated enroot's commands share (./enroot-cli.ts, ./enroot-start.ts).

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
}

/** Where enroot keeps containers (create.md: under $ENROOT_DATA_PATH), as its messages name it. */
export const dataPath = (name: string) => `$ENROOT_DATA_PATH/${name}`;

export const fail = (io: Io, msg: string): number => {
  io.err(`[ERROR] ${msg}\n`);
  return 1;
};
