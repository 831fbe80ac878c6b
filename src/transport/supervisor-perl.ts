// The node's supervisor in perl, where the node has perl with its POSIX module (perl-base, which
// Debian and Ubuntu mark essential; perl-POSIX on RHEL): the same protocol as the shell's
// (supervisor-script.ts), in one process. The shell's costs a workload four forks of itself (the
// runner, two framers, the command) and a setsid exec: 82 ms of CPU a workload on a 2-core
// machine where a fork and exec costs 3.4 ms, where this takes 49 (28 recorded workloads
// started at once: `BENCH=supervisor`, scripts/bench-supervisor.mjs). It reads every command's stdout and stderr through select(2), in
// blocks, where the shell's framers read byte by byte.
//
// What it keeps of the shell's: each `s` command leads its own session (setsid), so `$$` in its
// line is its process group; a `k` command runs in the supervisor's; a command's stdin is
// /dev/null; an exit frame comes after its command's last output frame, once both its pipes are
// closed (an orphan that holds one delays it, as it delays the shell's framer) and the command
// has been reaped, with the shell's status (128 + the signal of a command killed by one). When
// its stdin ends or no byte comes for more than the heartbeat timeout, it starts the watchdog
// (SUPERVISED_WATCHDOG, under the kill prefix) for every `s` command not yet done, reads no
// more requests, and exits once those commands and watchdogs are done.
//
// What it does better: frames go out through a queue on a non-blocking stdout, so a controller
// that stops reading cannot keep the heartbeat timeout from firing (the shell's framers block on
// their own, apart from its reader); over 1 MiB queued, it stops reading the commands' output
// until the queue drains (the shell's framers block likewise). A long line's pieces go out as
// they come, not once its newline does.
//
// It leaves $0 alone: perl's $0 on Linux overwrites the environment's memory too, and
// /proc/PID/environ then loses the run's tag, by which cleanup and killRun find it.
//
// Where it has Time::HiRes, it takes `r` requests too: a recorded workload it starts itself,
// with the deadline, end record and tags that `sh`, `timeout` and the recorder's bash give it
// on any other path (direct-start.ts says which rules it keeps).
//
// Where the references are silent: perl without POSIX execs the shell's supervisor with the same
// arguments; a perl that cannot start at all leaves the node without a supervisor, and its
// workloads take a channel each, as on a node that refuses one (said in each log). Its clock is
// whole seconds (Time::HiRes is not in perl-base), so the heartbeat timeout fires after more
// than its seconds and at most two seconds later (its loop wakes at least every second): never
// early.
import { quote } from "../util/shell.js";
import {
  END_MARKER,
  HEARTBEAT_TIMEOUT_S,
  JOB_TAG,
  PGID_MARKER,
  PICK_SHELL,
  SUPERVISED_WATCHDOG,
} from "./remote-scripts.js";
import { FRAME_PAYLOAD, SUP_MARKER, supervisorScript } from "./supervisor-script.js";

/** Bytes queued for the controller past which the commands' output is no longer read. */
const QUEUE_MAX = 1 << 20;

/**
 * The perl script. Arguments: the name it shows ($0), the heartbeat timeout in seconds, the kill
 * prefix of its watchdogs, the shell and the shell supervisor's script (its fallback), and the
 * watchdog's script.
 */
export function perlSupervisor(): string {
  return String.raw`use strict;
my ($name, $hb, $su, $sh, $script, $wd) = @ARGV;
unless (eval { require POSIX; 1 }) { exec { $sh } $sh, '-c', $script, $name, $hb, $su; exit 127 }
unless (grep { length && -x "$_/timeout" } split /:/, ($ENV{PATH} || '')) { print '${SUP_MARKER}cannot: timeout is missing on the node', "\n"; exit 0 }
my $HR = eval { require Time::HiRes; 1 }; my $FP = ${FRAME_PAYLOAD}; my $QMAX = ${QUEUE_MAX};
sub nb { fcntl($_[0], POSIX::F_SETFL(), fcntl($_[0], POSIX::F_GETFL(), 0) | POSIX::O_NONBLOCK()) }
my (%cmd, %of, %src, %watch); my ($q, $in, $reading, $broken, $last) = ('', '', 1, 0, time);
pipe(my $sr, my $sw) or die "pipe: $!"; nb($sr); nb($sw); nb(\*STDOUT);
$SIG{PIPE} = 'IGNORE'; $SIG{CHLD} = sub { syswrite $sw, 'c' };
sub intr { !defined $_[0] && ($! == POSIX::EINTR() || $! == POSIX::EAGAIN()) }
sub flush { return if $q eq '' || $broken; my $n = syswrite STDOUT, $q; if (defined $n) { substr($q, 0, $n) = '' } elsif (!intr($n)) { $broken = 1; $q = '' } }
sub done { my $id = shift; my $c = $cmd{$id} or return; return if $c->[2] > 0 || !defined $c->[3]; $q .= "$id x $c->[3]\n"; delete $cmd{$id} }
sub now { $HR ? Time::HiRes::time() : time }
sub psi { open(my $f, '<', '/proc/pressure/cpu') or return ''; my $l = <$f>; defined $l && $l =~ /total=(\d+)/ ? $1 : '' }
sub reap { while ((my $p = waitpid(-1, POSIX::WNOHANG())) > 0) { next if delete $watch{$p}; my $id = delete $of{$p}; next unless defined $id; my $s = $?; my $c = $cmd{$id};
  my $rc = $s & 127 ? 128 + ($s & 127) : $s >> 8; $c->[3] = $c->[4] ? ended($id, $c->[4], $rc) : $rc; done($id) } }
sub piece { my ($id, $L, $b) = @_; $q .= "$id " . uc($L) . " $b\n" }
sub line { my ($id, $L, $l) = @_; while (length $l > $FP) { piece($id, $L, substr($l, 0, $FP)); substr($l, 0, $FP) = '' } $q .= "$id $L $l\n" }
sub cut { my ($x, $id, $L) = ($_[0], @{$_[0]}[1, 2]);
  while ((my $i = index $x->[3], "\n") >= 0) { line($id, $L, substr($x->[3], 0, $i)); substr($x->[3], 0, $i + 1) = '' }
  while (length $x->[3] > $FP) { piece($id, $L, substr($x->[3], 0, $FP)); substr($x->[3], 0, $FP) = '' } }
sub out { my $f = shift; my $x = $src{$f}; my ($fh, $id, $L) = @$x;
  my $n = sysread $fh, $x->[3], 65536, length $x->[3]; return 0 if intr($n); cut($x); return 1 if $n;
  piece($id, $L, $x->[3]) if length $x->[3]; close $fh; delete $src{$f}; $cmd{$id}[2]--; done($id); 0 }
sub ended { my ($id, $d, $rc) = @_; return 137 if $d->[4] == 2; my $e = now(); my $f = $d->[5]; 1 while exists $src{$f} && out($f);
  my $w = psi(); my $end = '${END_MARKER}' . sprintf('rc=%s start=%s end=%.6f cpuwait=%s', $rc, $d->[0], $e, $d->[1] ne '' && $w ne '' ? $w - $d->[1] : '');
  if (exists $src{$f}) { $src{$f}[3] .= "$end\n"; cut($src{$f}) } else { line($id, 'e', $end) } $d->[4] ? 124 : $rc }
sub deadlines { my ($t, $next) = (now(), 1);
  for my $c (values %cmd) { my $d = $c->[4]; next unless $d && !defined $c->[3] && $d->[4] < 2;
    if ($t >= $d->[2]) { if ($d->[4]) { kill 'KILL', -$c->[0]; $d->[4] = 2; next } kill 'TERM', -$c->[0]; kill 'CONT', -$c->[0]; $d->[4] = 1; $d->[2] = $t + $d->[3] }
    $next = $d->[2] - $t if $d->[2] - $t < $next }
  $next < 0.01 ? 0.01 : $next }
sub child { my ($s, $out, $err, $env, @argv) = @_; my $p = fork; return $p if !defined $p || $p;
  POSIX::setsid() if $s; $SIG{PIPE} = 'DEFAULT'; for (@{$env || []}) { my ($k, $v) = split /=/, $_, 2; $ENV{$k} = $v }
  open STDIN, '<', '/dev/null'; open STDOUT, '>&', $out; open STDERR, '>&', $err; exec { $argv[0] } @argv; POSIX::_exit(127) unless $env;
  my $nf = $! == POSIX::ENOENT(); print STDERR "slicecheck-record: $argv[0]: $!\n"; POSIX::_exit($nf ? 127 : 126) }
sub start { my ($id, $s, $env, $d, @argv) = @_; my ($or, $ow, $er, $ew);
  unless (@argv && pipe($or, $ow) && pipe($er, $ew)) { $q .= "$id x 127\n"; return }
  push @$d, fileno $er if $d; my $p = child($s, $ow, $ew, $env, @argv); unless (defined $p) { $q .= "$id x 127\n"; return }
  close $ow; close $ew; $cmd{$id} = [$p, $s, 2, undef, $d]; $of{$p} = $id; if ($d) { nb($or); nb($er); $q .= "$id e " . '${PGID_MARKER}' . "$p\n" }
  $src{fileno $or} = [$or, $id, 'o', '']; $src{fileno $er} = [$er, $id, 'e', ''] }
sub direct { my ($id, $t) = @_; my ($dl, $gr, $ne, @a) = split /\0/, $t, -1; my @env = splice @a, 0, $ne || 0;
  start($id, 1, \@env, [sprintf('%.6f', now()), psi(), now() + $dl, $gr, 0], @a) }
sub dec { my $t = shift; $t =~ s/\\0([0-7]{0,3})/chr(oct($1 || 0) & 255)/ge; $t }
sub finish { $reading = 0;
  for my $id (keys %cmd) { my ($p, $s) = @{$cmd{$id}}; next unless $s;
    open my $null, '>', '/dev/null' or next; my $w = child(0, $null, $null, undef, split(' ', $su), 'sh', '-c', $wd, 'watchdog', $id, $p); $watch{$w} = 1 if $w } }
sub request { my $n = sysread STDIN, $in, 65536, length $in; return if intr($n); return finish() unless $n; $last = time;
  while ((my $i = index $in, "\n") >= 0) { my $l = substr $in, 0, $i; substr($in, 0, $i + 1) = ''; next if $l eq 'h';
    unless ($l =~ /^([skr]) / && ($1 ne 'r' || $HR)) { print STDERR "bad request: $l\n"; next }
    my ($k, $id, $t) = split ' ', $l; ($id, $t) = ($id // '', dec($t // ''));
    if ($k eq 'r') { direct($id, $t) } else { start($id, $k eq 's', undef, undef, 'sh', '-c', $t) } } }
$q .= '${SUP_MARKER}ready ' . $$ . ($HR ? ' r' : '') . "\n";
while (1) {
  reap(); flush();
  last if !$reading && !%cmd && !%watch && ($q eq '' || $broken);
  my ($r, $w) = ('', ''); vec($r, fileno $sr, 1) = 1; vec($r, 0, 1) = 1 if $reading;
  if (length $q < $QMAX) { vec($r, $_, 1) = 1 for keys %src }
  vec($w, 1, 1) = 1 if $q ne '' && !$broken;
  my $n = select($r, $w, undef, deadlines());
  if ($n > 0) { sysread $sr, my $drain, 512 if vec($r, fileno $sr, 1); request() if $reading && vec($r, 0, 1); out($_) for grep { vec($r, $_, 1) } keys %src }
  finish() if $reading && time - $last > $hb;
}
exit 0;
`;
}

/**
 * The command line that starts the node's supervisor over a channel, tagged with the run
 * (killRun, listRun and `slicecheck cleanup` find it and everything it starts): perl's where
 * `command -v` (a builtin: no process) finds perl, else the shell's. perl gets the shell's
 * script too, which it execs where it lacks its POSIX module.
 */
export function supervisorCommand(
  runTag: string,
  sudo: boolean,
  heartbeatTimeoutS = HEARTBEAT_TIMEOUT_S,
): string {
  const args = [String(heartbeatTimeoutS), quote(sudo ? "sudo -n" : "")].join(" ");
  return [
    // bash where the node has it: its read and printf spare processes on every request.
    PICK_SHELL,
    // Exported by the login shell, which then execs the supervisor: `env` was an exec more.
    "export",
    quote(`SLICECHECK_RUN=${runTag}`),
    `${JOB_TAG};`,
    `s=${quote(supervisorScript())};`,
    "command -v perl >/dev/null 2>&1 && exec perl -e",
    quote(perlSupervisor()),
    `slicecheck-supervisor ${args} "$b" "$s" ${quote(SUPERVISED_WATCHDOG)};`,
    `exec "$b" -c "$s" slicecheck-supervisor ${args}`,
  ].join(" ");
}
