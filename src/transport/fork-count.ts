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

/**
 * bash text for the node lease's holder, which runs as long as its connection: into KS the pid of
 * the sshd process that serves that connection (its nearest ancestor named sshd, or sshd-session
 * from OpenSSH 9.8 on), and into KF the node's fork count as that process began: FORK_MARGIN
 * covers its first second, as it covers a watchdog's, and each hundredth of a second of its age
 * beyond that (/proc/uptime less its start time, both in hundredths) is reckoned at the same
 * 20 000 forks a second; SECONDS counts from its start too, rounded up. Every process the run starts
 * over that connection is forked from it later, the reads started beside the lock included,
 * whose logins may come before the holder's own: so the release's scan (`tw TAG "$KS" "$KF"`,
 * remote-scripts.ts) reads only what came after, and looks a second time only where an exec was
 * under way. Both stay empty (the scan of everything, and its second look) under sh, without an
 * sshd among the first 8 ancestors (a node run locally), and where the reckoning goes below zero.
 */
export const CONNECTION_BOUND = `KS= KF=; [ -z "\${BASH_VERSION:-}" ] || eval 'p=$PPID; c=; i=0; while (( i < 8 && p > 1 )); do read -r c < "/proc/$p/comm" || break; [[ $c == sshd || $c == sshd-session ]] && break; read -r l < "/proc/$p/stat" || break; l=\${l##*) }; l=\${l#* }; p=\${l%% *}; c=; i=$((i + 1)); done 2>/dev/null; if [[ $c == sshd || $c == sshd-session ]] && read -r l < "/proc/$p/stat" && read -r u _ < /proc/uptime; then f=(\${l##*) }); if [[ \${f[19]} =~ ^[0-9]+$ && $u =~ ^[0-9]+\\.[0-9][0-9]$ ]]; then a=$(( 10#\${u/./} - f[19] )); (( a < 0 )) && a=0; ${STAT_FORKS("KF")} if [[ $KF =~ ^[0-9]+$ ]] && (( a <= 100 || KF - (a - 100) * ${FORK_MARGIN / 100} >= 0 )); then (( a <= 100 )) || KF=$(( KF - (a - 100) * ${FORK_MARGIN / 100} )); KS=$p; SECONDS=$(( (a + 99) / 100 )); else KF=; fi; fi; fi 2>/dev/null';`;
