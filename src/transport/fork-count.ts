// The node's fork count (/proc/stat's `processes`) as a command's watchdog reads it: what lets
// the watchdog rule out a wrap of the pid counter by forks as well as by time (remote-scripts.ts
// NEW_TAGGED), so that its end scan reads only the processes started after the command.

/**
 * bash text that reads /proc/stat's `processes` into the variable `v` (empty where it cannot): the
 * whole file in one `read -d ""`, which bash does in sequential chunks (one read(2) here, strace).
 * A `while read` line by line made bash read 4 KB and seek back for every line: some 260 reads of
 * /proc/stat on a 256-core node, whose `processes` line comes after a line per core. dash reads
 * byte by byte (35 ms for a 60 KB file of that shape here), so only bash reads it.
 */
export const STAT_FORKS = (v: string) =>
  `${v}=; IFS= read -r -d "" ${v} </proc/stat 2>/dev/null; ${v}=\${${v}#*processes }; ${v}=\${${v}%%[!0-9]*};`;

/**
 * The head of a command's watchdog, which starts with its command: the node's fork count so far
 * into $2 (empty where the watchdog is not bash), beside the command's pid in $1. A stray of the
 * command has a pid above the command's own unless the pid counter went round since, and that
 * takes at least pid_max - 301 pids given, less those in use (at most the kernel's task count,
 * /proc/loadavg's fourth field), each one a fork: so fewer forks than that since rule a wrap out
 * however long the command ran. Where pid_max is 32768 (2-core test machines, and many HPC
 * nodes), time alone allowed that only to commands shorter than 0.6 s: the others' watchdogs
 * ended with two greps of every process's environ and a sleep, about 240 a test run. The count
 * is global (every namespace's forks), so it can only overstate.
 */
export const WATCHDOG_FORKS = `F0=; if [ -n "\${BASH_VERSION:-}" ]; then ${STAT_FORKS("F0")} fi; set -- "$1" "$F0";`;

/** The forks between the command's start (its login's fork) and the watchdog's reading, within
 * their first second at 20 000 forks a second, the rate the time rule assumes. */
export const FORK_MARGIN = 20000;
