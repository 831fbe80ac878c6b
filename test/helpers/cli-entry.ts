// bin/slicecheck.js on the sources (tsx), for tests that need a real process: standard input,
// signals, exit codes.
import { exitOnInterrupt, main } from "../../src/cli/main.js";

exitOnInterrupt();
process.exitCode = await main(process.argv);
