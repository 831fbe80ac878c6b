// Where a cluster's resident simulator (server.ts) says where it is, in the cluster's folder.
export const PID_FILE = "resident.pid";
/** Its loopback port, read by each node tool's wrapper (../tools.ts) at every call. */
export const PORT_FILE = "resident.port";
/** Where it puts the answers that the wrappers read themselves (server.ts reply). */
export const ANSWERS_DIR = "resident-answers";
