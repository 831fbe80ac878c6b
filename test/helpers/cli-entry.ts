// bin/slicecheck.js on the sources (tsx), for tests that need a real process: standard input,
// signals, exit codes.
import { dropOutputToClosedPipes, exitOnInterrupt, main } from "../../src/cli/main.js";

exitOnInterrupt();
dropOutputToClosedPipes();
process.exitCode = await main(process.argv);
