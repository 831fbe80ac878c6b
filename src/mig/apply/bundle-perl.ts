// A bundle's reads run by perl, where the node has it (bundleScript execs this first): the same
// output as the shell's script, which stays the fallback. The shell's costs each read a
// `timeout` (a fork and an exec, for its deadline) besides the read itself, and the bundle a
// `mktemp`, a `cat` and an `rm`; perl forks each read itself, keeps every read's deadline in
// its own loop and holds the outputs in memory: 4 simulated nodes' discovery (7 reads each)
// took 0.41 s of the run's wall time on 2 cores before, where forks cost 3.4 ms each.
//
// Each read leads its own process group (setpgrp, as `timeout` makes one), so at its deadline
// TERM goes to the group, then KILL 5 s later where it still runs (`timeout -k 5`), and the
// read's status is 124, or 137 where it had to be killed, as coreutils' `timeout` reports. A
// read is done once it has been reaped and what its pipes held then is read: a process it left
// behind holding them does not keep the bundle waiting, as with the shell's files. Only perl's
// builtins: no module, so a node with perl-base alone runs it. Its clock is whole seconds
// (Time::HiRes is not in perl-base), so a deadline fires after its seconds and at most two
// seconds later (its loop wakes every second): never early. EINTR is 4 and WNOHANG 1 on
// every Linux.

/** Seconds between a read's TERM and its KILL, as the shell's `timeout -k`. */
export const KILL_AFTER_S = 5;

/** The perl script. Arguments: the per-read deadline in seconds ("" for none), then each read:
 * `a N word…` (an argv of N words) or `s TEXT` (a script for sh). */
export const PERL_BUNDLE = String.raw`use strict;
my $to = shift @ARGV; my @r;
while (@ARGV) { my $k = shift @ARGV; if ($k eq 'a') { my $n = shift @ARGV; push @r, [splice @ARGV, 0, $n] } else { push @r, ['sh', '-c', shift @ARGV] } }
pipe(my $sr, my $sw) or die "pipe: $!"; $SIG{CHLD} = sub { syswrite $sw, 'c' };
my (@out, @rc, @pid, @due, @hit, %src, %of, %fh);
for my $i (0 .. $#r) {
  $out[$i] = ['', '']; my ($or, $ow, $er, $ew);
  unless (pipe($or, $ow) && pipe($er, $ew)) { $rc[$i] = 126; next }
  my $p = fork; unless (defined $p) { $rc[$i] = 126; next }
  if (!$p) { setpgrp(0, 0); open STDIN, '<', '/dev/null'; open STDOUT, '>&', $ow; open STDERR, '>&', $ew; exec { $r[$i][0] } @{$r[$i]}; print STDERR "$r[$i][0]: $!\n"; exit 127 }
  close $ow; close $ew; $pid[$i] = $p; $of{$p} = $i; $due[$i] = length $to ? time + $to : 0;
  $src{fileno $or} = [$or, $i, 0]; $src{fileno $er} = [$er, $i, 1]; push @{$fh{$i}}, fileno $or, fileno $er;
}
sub take { my $f = shift; my $x = $src{$f}; my $n = sysread $x->[0], $out[$x->[1]][$x->[2]], 65536, length $out[$x->[1]][$x->[2]]; return 1 if $n || (!defined $n && $! == 4); close $x->[0]; delete $src{$f}; 0 }
sub drain { my $i = shift; for my $f (grep { $src{$_} } @{$fh{$i}}) { while (1) { my $v = ''; vec($v, $f, 1) = 1; last unless select($v, undef, undef, 0) > 0 && take($f) } if ($src{$f}) { close $src{$f}[0]; delete $src{$f} } } }
sub reap { while ((my $p = waitpid(-1, 1)) > 0) { my $i = delete $of{$p}; next unless defined $i; my $s = $?; $rc[$i] = $hit[$i] ? ($hit[$i] > 1 ? 137 : 124) : $s & 127 ? 128 + ($s & 127) : $s >> 8; drain($i) } }
while (1) {
  reap(); last unless %of;
  for my $i (grep { $due[$_] && defined $pid[$_] && !defined $rc[$_] } 0 .. $#r) {
    if (!$hit[$i] && time > $due[$i]) { $hit[$i] = 1; kill 'TERM', -$pid[$i] }
    elsif ($hit[$i] == 1 && time > $due[$i] + ${KILL_AFTER_S}) { $hit[$i] = 2; kill 'KILL', -$pid[$i] }
  }
  my $v = ''; vec($v, fileno $sr, 1) = 1; vec($v, $_, 1) = 1 for keys %src;
  if (select($v, undef, undef, 1) > 0) { sysread $sr, my $d, 512 if vec($v, fileno $sr, 1); take($_) for grep { vec($v, $_, 1) } keys %src }
}
for my $i (0 .. $#r) { print '@@slicecheck-out ', $i, ' ', ($rc[$i] // ''), "\n", $out[$i][0], "\n", '@@slicecheck-err ', $i, "\n", $out[$i][1], "\n" }
`;

/** The perl script's arguments for one read. */
export function perlRead(read: readonly string[] | { shell: string }): string[] {
  return "shell" in read ? ["s", read.shell] : ["a", String(read.length), ...read];
}
