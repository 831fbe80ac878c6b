#!/usr/bin/env node
// The simulated node's `lsmod` (answers.ts).
import { lsmodText } from "./answers.js";

process.stdout.write(lsmodText(process.env.SLICECHECK_SIM_STATE));
