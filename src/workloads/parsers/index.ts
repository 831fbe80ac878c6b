// Public surface of the workload output parsers: pure functions from captured text to data.

export * from "./builtin.js";
export * from "./cuda-errors.js";
export * from "./dcgmi.js";
export * from "./exit-codes.js";
export * from "./gpu-burn.js";
export * from "./kinds.js";
export * from "./nccl-tests.js";
export * from "./nccl-transport.js";
export { stripSourceHeader } from "./text.js";
