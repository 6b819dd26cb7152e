/**
 * Runs the logged activity in a process of its own, whose stderr the test reads.
 * Args: <container>. Prints {"done":true} on stdout at the end.
 */
import { runLoggedActivity } from "./activity.js";

const [containerName] = process.argv.slice(2);
await runLoggedActivity(process.env.ASC_TEST_CONNECTION_STRING!, process.env.ASC_TEST_BLOB_ENDPOINT!, containerName!);
console.log(JSON.stringify({ done: true }));
